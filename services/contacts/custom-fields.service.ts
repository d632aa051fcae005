import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { defineAction, defineService } from "../../lib/define-service";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { CustomFieldGroupSchema, CustomFieldSchema, schemas } from "./contacts.schemas";
import { createField, createGroup, listFields, listGroups } from "./custom-fields.repo";

const read = requires("contacts.read");
const write = requires("contacts.write");

const WS = "/workspaces/:workspaceId/custom-fields";
const tags = ["Custom fields"];

/** Typed custom contact fields (checked on every contact write) and their groups. */
export default defineService({
  name: "customFields",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** Field definitions in order (`?groupId=` narrows). contacts.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List the workspace's custom fields" },
      ...read,
      params: schemas.customFieldList,
      result: Type.Array(CustomFieldSchema),
      handler: (ctx) => listFields(workspaceOf(ctx), ctx.params.groupId),
    }),

    /** Define a field `{key, label, type, options?, groupId?, required?, position?}`; 409 on a taken key. contacts.write. */
    create: defineAction({
      rest: `POST ${WS}`,
      openapi: { tags, summary: "Create a custom field (its key is unique in the workspace)" },
      ...write,
      params: schemas.customFieldCreate,
      status: 201,
      result: CustomFieldSchema,
      handler(ctx) {
        const { workspaceId: _path, ...field } = ctx.params; // the workspace comes from ctx.meta
        return createField(workspaceOf(ctx), field);
      },
    }),

    /** Groups with their field counts. contacts.read. */
    listGroups: defineAction({
      rest: `GET ${WS}/groups`,
      openapi: { tags, summary: "List custom field groups" },
      ...read,
      params: schemas.workspaceOnly,
      result: Type.Array(CustomFieldGroupSchema),
      handler: (ctx) => listGroups(workspaceOf(ctx)),
    }),

    /** Add a group `{name, position?}`; 409 on a taken name. contacts.write. */
    createGroup: defineAction({
      rest: `POST ${WS}/groups`,
      openapi: { tags, summary: "Create a custom field group" },
      ...write,
      params: schemas.customFieldGroupCreate,
      status: 201,
      result: CustomFieldGroupSchema,
      handler: (ctx) =>
        createGroup(workspaceOf(ctx), { name: ctx.params.name, position: ctx.params.position }),
    }),
  },
});
