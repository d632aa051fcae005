import type { ServiceSchema } from "moleculer";
import { audit } from "../../lib/audit";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Pipeline } from "../../models";
import { answers, listOf, PipelineSchema, SuccessSchema } from "./crm.openapi";
import { schemas } from "./crm.schemas";
import * as repo from "./pipelines.repo";

/** Validated params arrive typed by the schema; handlers read them through this alias. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const openapi = (summary: string, responses: Record<string, unknown>) => ({
  tags: ["Deals and pipelines"],
  summary,
  responses,
});

/** Deal pipelines: ordered stages, each open, won or lost. contacts.* scopes. */
const PipelinesService: ServiceSchema = {
  name: "pipelines",
  mixins: [DbMixin(Pipeline)],
  settings: { rest: "/" },

  actions: {
    /** Every pipeline, the default first (a workspace gets the usual sales pipeline the first time). contacts.read. */
    list: {
      rest: "GET /workspaces/:workspaceId/pipelines",
      auth: "any",
      permission: "contacts.read",
      params: schemas.pipelines.list,
      openapi: openapi(
        "List pipelines with their ordered stages (default first)",
        answers(listOf(PipelineSchema)),
      ),
      handler: (ctx: Ctx) => repo.listPipelines(workspaceOf(ctx)),
    },

    /** One pipeline with its stages. contacts.read. */
    get: {
      rest: "GET /workspaces/:workspaceId/pipelines/:pipelineId",
      auth: "any",
      permission: "contacts.read",
      params: schemas.pipelines.get,
      openapi: openapi("Get a pipeline", answers(PipelineSchema)),
      handler: async (ctx: Ctx) =>
        repo.pipelineView(await repo.findPipeline(workspaceOf(ctx), ctx.params.pipelineId)),
    },

    /** Create a pipeline from ordered stages `{name, probability?, won?, lost?}`. contacts.write. */
    create: {
      rest: "POST /workspaces/:workspaceId/pipelines",
      auth: "any",
      permission: "contacts.write",
      params: schemas.pipelines.create,
      openapi: openapi(
        "Create a pipeline (stages in order; names unique; a stage is won, lost or open)",
        answers(PipelineSchema, 201),
      ),
      async handler(ctx: Ctx) {
        const pipeline = await repo.createPipeline(
          workspaceOf(ctx),
          ctx.params as { name: string; stages: [] },
        );
        await audit(ctx, "pipeline.created", { type: "pipeline", id: pipeline.id }, { name: pipeline.name });
        ctx.meta.$statusCode = 201;
        return pipeline;
      },
    },

    /** Rename, make default, or replace the stages (send `id` to keep a stage). contacts.write. */
    update: {
      rest: "PATCH /workspaces/:workspaceId/pipelines/:pipelineId",
      auth: "any",
      permission: "contacts.write",
      params: schemas.pipelines.update,
      openapi: openapi(
        "Update a pipeline; `stages` replaces the ordered list (stages sent with their id keep it; removing a stage that holds deals is 409)",
        answers(PipelineSchema),
      ),
      async handler(ctx: Ctx) {
        const { name, stages, isDefault } = ctx.params;
        const pipeline = await repo.updatePipeline(workspaceOf(ctx), ctx.params.pipelineId, {
          name,
          stages,
          isDefault,
        });
        await audit(
          ctx,
          "pipeline.updated",
          { type: "pipeline", id: pipeline.id },
          {
            fields: ["name", "stages", "isDefault"].filter((k) => ctx.params[k] !== undefined),
          },
        );
        return pipeline;
      },
    },

    /** Delete a pipeline that holds no deals (409 otherwise). contacts.delete. */
    remove: {
      rest: "DELETE /workspaces/:workspaceId/pipelines/:pipelineId",
      auth: "any",
      permission: "contacts.delete",
      params: schemas.pipelines.remove,
      openapi: openapi("Delete a pipeline that holds no deals (409 otherwise)", answers(SuccessSchema)),
      async handler(ctx: Ctx) {
        await repo.deletePipeline(workspaceOf(ctx), ctx.params.pipelineId);
        await audit(ctx, "pipeline.deleted", { type: "pipeline", id: ctx.params.pipelineId });
        return { success: true };
      },
    },
  },
};

export default PipelinesService;
