import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { defineAction, defineService } from "../../lib/define-service";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { schemas, StageDefSchema, SuccessSchema } from "./contacts.schemas";
import { createStage, deleteStage, listStages, updateStage } from "./stages.repo";

const remove = requires("contacts.delete");
const read = requires("contacts.read");
const write = requires("contacts.write");

const WS = "/workspaces/:workspaceId/stages";
const tags = ["Lifecycle stages"];

/** Lifecycle stage definitions (the ladder contacts climb). A workspace starts with HubSpot-like defaults. */
export default defineService({
  name: "stages",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** Stages in order, each with its contact count. contacts.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List lifecycle stages in order" },
      ...read,
      params: schemas.workspaceOnly,
      result: Type.Array(StageDefSchema),
      handler: (ctx) => listStages(workspaceOf(ctx)),
    }),

    /** Add a stage `{key, name, position?, color?}` (409 on a taken key). contacts.write. */
    create: defineAction({
      rest: `POST ${WS}`,
      openapi: { tags, summary: "Create a lifecycle stage" },
      ...write,
      params: schemas.stageDefCreate,
      status: 201,
      result: StageDefSchema,
      handler(ctx) {
        const { workspaceId: _path, ...stage } = ctx.params; // the workspace comes from ctx.meta
        return createStage(workspaceOf(ctx), stage);
      },
    }),

    /** Rename, reorder or recolour a stage (its key is fixed). contacts.write. */
    update: defineAction({
      rest: `PATCH ${WS}/:stageId`,
      openapi: { tags, summary: "Rename, reorder or recolour a lifecycle stage" },
      ...write,
      params: schemas.stageDefUpdate,
      result: StageDefSchema,
      handler(ctx) {
        const { workspaceId: _path, stageId, ...changes } = ctx.params;
        return updateStage(workspaceOf(ctx), stageId, changes);
      },
    }),

    /** Delete a stage no contact is in (409 otherwise). contacts.delete. */
    remove: defineAction({
      rest: `DELETE ${WS}/:stageId`,
      openapi: { tags, summary: "Delete a lifecycle stage" },
      ...remove,
      params: schemas.stageDefDelete,
      result: SuccessSchema,
      async handler(ctx) {
        await deleteStage(workspaceOf(ctx), ctx.params.stageId);
        return { success: true as const };
      },
    }),
  },
});
