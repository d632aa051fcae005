import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { defineAction, defineService } from "../../lib/define-service";
import { audit } from "../../lib/audit";
import { found, notFound } from "../../lib/errors";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { PipelineSchema, schemas, SuccessSchema } from "./crm.schemas";
import { sentFields } from "./crm.shared";
import * as repo from "./pipelines.repo";

const remove = requires("contacts.delete");
const read = requires("contacts.read");
const write = requires("contacts.write");

const openapi = (summary: string) => ({ tags: ["Deals and pipelines"], summary });

/** Deal pipelines: ordered stages, each open, won or lost. contacts.* scopes. */
export default defineService({
  name: "pipelines",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** Every pipeline, the default first (a workspace gets the usual sales pipeline the first time). contacts.read. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/pipelines",
      ...read,
      params: schemas.pipelines.list,
      result: Type.Array(PipelineSchema),
      openapi: openapi("List pipelines with their ordered stages (default first)"),
      handler: (ctx) => repo.listPipelines(workspaceOf(ctx)),
    }),

    /** One pipeline with its stages. contacts.read. */
    get: defineAction({
      rest: "GET /workspaces/:workspaceId/pipelines/:pipelineId",
      ...read,
      params: schemas.pipelines.get,
      result: PipelineSchema,
      openapi: openapi("Get a pipeline"),
      handler: async (ctx) =>
        repo.pipelineView(
          found(await repo.findPipeline(workspaceOf(ctx), ctx.params.pipelineId), "Pipeline"),
        ),
    }),

    /** Create a pipeline from ordered stages `{name, probability?, won?, lost?}`. contacts.write. */
    create: defineAction({
      rest: "POST /workspaces/:workspaceId/pipelines",
      ...write,
      params: schemas.pipelines.create,
      status: 201,
      result: PipelineSchema,
      openapi: openapi("Create a pipeline (stages in order; names unique; a stage is won, lost or open)"),
      async handler(ctx) {
        const pipeline = await repo.createPipeline(workspaceOf(ctx), ctx.params);
        await audit(ctx, "pipeline.created", { type: "pipeline", id: pipeline.id }, { name: pipeline.name });
        return pipeline;
      },
    }),

    /** Rename, make default, or replace the stages (send `id` to keep a stage). contacts.write. */
    update: defineAction({
      rest: "PATCH /workspaces/:workspaceId/pipelines/:pipelineId",
      ...write,
      params: schemas.pipelines.update,
      result: PipelineSchema,
      openapi: openapi(
        "Update a pipeline; `stages` replaces the ordered list (stages sent with their id keep it; removing a stage that holds deals is 409)",
      ),
      async handler(ctx) {
        const { name, stages, isDefault } = ctx.params;
        const pipeline = found(
          await repo.updatePipeline(workspaceOf(ctx), ctx.params.pipelineId, { name, stages, isDefault }),
          "Pipeline",
        );
        await audit(
          ctx,
          "pipeline.updated",
          { type: "pipeline", id: pipeline.id },
          {
            fields: sentFields(ctx.params, ["name", "stages", "isDefault"]),
          },
        );
        return pipeline;
      },
    }),

    /** Delete a pipeline that holds no deals (409 otherwise). contacts.delete. */
    remove: defineAction({
      rest: "DELETE /workspaces/:workspaceId/pipelines/:pipelineId",
      ...remove,
      params: schemas.pipelines.remove,
      result: SuccessSchema,
      openapi: openapi("Delete a pipeline that holds no deals (409 otherwise)"),
      async handler(ctx) {
        if (!(await repo.deletePipeline(workspaceOf(ctx), ctx.params.pipelineId))) throw notFound("Pipeline");
        await audit(ctx, "pipeline.deleted", { type: "pipeline", id: ctx.params.pipelineId });
        return { success: true as const };
      },
    }),
  },
});
