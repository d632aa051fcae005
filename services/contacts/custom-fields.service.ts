import type { ServiceSchema } from "moleculer";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Contact } from "../../models";
import { schemas } from "./contacts.schemas";
import { createField, createGroup, listFields, listGroups } from "./custom-fields.repo";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const WS = "/workspaces/:workspaceId/custom-fields";

/** Typed custom contact fields (checked on every contact write) and their groups. */
const CustomFieldsService: ServiceSchema = {
  name: "customFields",
  mixins: [DbMixin(Contact)],
  settings: { rest: "/" },

  actions: {
    /** Field definitions in order (`?groupId=` narrows). contacts.read. */
    list: {
      rest: `GET ${WS}`,
      openapi: { tags: ["Custom fields"], summary: "List the workspace's custom fields" },
      auth: "any",
      permission: "contacts.read",
      params: schemas.customFieldList,
      handler: (ctx: Ctx) => listFields(workspaceOf(ctx), ctx.params.groupId),
    },

    /** Define a field `{key, label, type, options?, groupId?, required?, position?}`; 409 on a taken key. contacts.write. */
    create: {
      rest: `POST ${WS}`,
      openapi: { tags: ["Custom fields"], summary: "Create a custom field (its key is unique in the workspace)" },
      auth: "any",
      permission: "contacts.write",
      params: schemas.customFieldCreate,
      async handler(ctx: Ctx) {
        const { key, label, type, options, groupId, required, position } = ctx.params;
        const field = await createField(workspaceOf(ctx), {
          key,
          label,
          type,
          options,
          groupId,
          required,
          position,
        });
        ctx.meta.$statusCode = 201;
        return field;
      },
    },

    /** Groups with their field counts. contacts.read. */
    listGroups: {
      rest: `GET ${WS}/groups`,
      openapi: { tags: ["Custom fields"], summary: "List custom field groups" },
      auth: "any",
      permission: "contacts.read",
      params: schemas.workspaceOnly,
      handler: (ctx: Ctx) => listGroups(workspaceOf(ctx)),
    },

    /** Add a group `{name, position?}`; 409 on a taken name. contacts.write. */
    createGroup: {
      rest: `POST ${WS}/groups`,
      openapi: { tags: ["Custom fields"], summary: "Create a custom field group" },
      auth: "any",
      permission: "contacts.write",
      params: schemas.customFieldGroupCreate,
      async handler(ctx: Ctx) {
        const group = await createGroup(workspaceOf(ctx), {
          name: ctx.params.name,
          position: ctx.params.position,
        });
        ctx.meta.$statusCode = 201;
        return group;
      },
    },
  },
};

export default CustomFieldsService;
