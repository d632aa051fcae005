import type { ServiceSchema } from "moleculer";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Contact } from "../../models";
import { schemas } from "./contacts.schemas";
import { createStage, deleteStage, listStages, updateStage } from "./stages";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const WS = "/workspaces/:workspaceId/stages";

/** Lifecycle stage definitions (the ladder contacts climb). A workspace starts with HubSpot-like defaults. */
const StagesService: ServiceSchema = {
  name: "stages",
  mixins: [DbMixin(Contact)],
  settings: { rest: "/" },

  actions: {
    /** Stages in order, each with its contact count. contacts.read. */
    list: {
      rest: `GET ${WS}`,
      openapi: { tags: ["Lifecycle stages"], summary: "List lifecycle stages in order" },
      auth: "any",
      permission: "contacts.read",
      params: schemas.workspaceOnly,
      handler: (ctx: Ctx) => listStages(workspaceOf(ctx)),
    },

    /** Add a stage `{key, name, position?, color?}` (409 on a taken key). contacts.write. */
    create: {
      rest: `POST ${WS}`,
      openapi: { tags: ["Lifecycle stages"], summary: "Create a lifecycle stage" },
      auth: "any",
      permission: "contacts.write",
      params: schemas.stageDefCreate,
      async handler(ctx: Ctx) {
        const stage = await createStage(
          workspaceOf(ctx),
          ctx.params as { key: string; name: string; position?: number; color?: string },
        );
        ctx.meta.$statusCode = 201;
        return stage;
      },
    },

    /** Rename, reorder or recolour a stage (its key is fixed). contacts.write. */
    update: {
      rest: `PATCH ${WS}/:stageId`,
      openapi: { tags: ["Lifecycle stages"], summary: "Rename, reorder or recolour a lifecycle stage" },
      auth: "any",
      permission: "contacts.write",
      params: schemas.stageDefUpdate,
      handler: (ctx: Ctx) =>
        updateStage(workspaceOf(ctx), ctx.params.stageId, {
          name: ctx.params.name,
          position: ctx.params.position,
          color: ctx.params.color,
        }),
    },

    /** Delete a stage no contact is in (409 otherwise). contacts.delete. */
    remove: {
      rest: `DELETE ${WS}/:stageId`,
      openapi: { tags: ["Lifecycle stages"], summary: "Delete a lifecycle stage" },
      auth: "any",
      permission: "contacts.delete",
      params: schemas.stageDefDelete,
      async handler(ctx: Ctx) {
        await deleteStage(workspaceOf(ctx), ctx.params.stageId);
        return { success: true };
      },
    },
  },
};

export default StagesService;
