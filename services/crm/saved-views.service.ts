import { Type } from "@sinclair/typebox";
import { Op } from "sequelize";
import { uniqueViolation } from "../../lib/database";
import { defineAction, defineService, type ServiceThis } from "../../lib/define-service";
import { conflict, found, notFound } from "../../lib/errors";
import { userOf } from "../../lib/tenancy";
import { DbMixin, inWorkspace, type DbState } from "../../mixins/db.mixin";
import { SavedView } from "../../models";
import { SavedViewSchema, schemas, SuccessSchema } from "./crm.schemas";

const openapi = (summary: string) => ({ tags: ["Saved views"], summary });

const viewOf = (v: SavedView, userId: string) => ({
  id: v.id,
  name: v.name,
  resource: v.resource,
  filters: v.filters,
  sort: v.sort,
  columns: v.columns,
  shared: v.shared,
  ownerId: v.userId,
  mine: v.userId === userId,
  createdAt: v.createdAt,
  updatedAt: v.updatedAt,
});

/** A user's view names are unique per list (the unique index answers 409). */
async function saving<T>(work: () => Promise<T>, name: string | undefined): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`You already have a view named '${name}' for this list`);
    throw err;
  }
}

/**
 * Saved list views: a user's named filters for one list, private or shared
 * with the workspace. Session only; only the owner changes or deletes a view
 * (another user's view is not found). The entity is read and written through
 * moleculer-db's adapter, scoped to the caller's workspace (mixins/db.mixin.ts).
 */
/** The saved views service's `this`: moleculer-db's adapter over its entity. */
type SavedViewsService = ServiceThis<DbState<SavedView>>;

export default defineService<SavedViewsService>({
  name: "savedViews",
  mixins: [DbMixin(SavedView)],
  settings: { rest: "/" },

  actions: {
    /** The caller's saved views and those others shared. Session. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/saved-views",
      auth: "session",
      params: schemas.savedViews.list,
      result: Type.Array(SavedViewSchema),
      openapi: openapi("The caller's saved views and the views other members shared (filter by resource)"),
      async handler(this: SavedViewsService, ctx) {
        const userId = userOf(ctx);
        const { resource } = ctx.params;
        const rows = await inWorkspace<SavedView>(this, ctx).find(
          { ...(resource ? { resource } : {}), [Op.or]: [{ userId }, { shared: true }] },
          { sort: ["resource", "name", "id"] },
        );
        return rows.map((v) => viewOf(v, userId));
      },
    }),

    /** Save a named list filter for one resource. Session. */
    create: defineAction({
      rest: "POST /workspaces/:workspaceId/saved-views",
      auth: "session",
      params: schemas.savedViews.create,
      status: 201,
      result: SavedViewSchema,
      openapi: openapi(
        "Save a named list view {name, resource, filters, sort, columns, shared} (name unique per user and resource: 409)",
      ),
      async handler(this: SavedViewsService, ctx) {
        const userId = userOf(ctx);
        const { workspaceId: _path, ...input } = ctx.params; // the workspace comes from ctx.meta
        const view = await saving(
          () => inWorkspace<SavedView>(this, ctx).insert({ filters: {}, columns: [], ...input, userId }),
          input.name,
        );
        return viewOf(view, userId);
      },
    }),

    /** Change one of the caller's views. Session. */
    update: defineAction({
      rest: "PATCH /workspaces/:workspaceId/saved-views/:viewId",
      auth: "session",
      params: schemas.savedViews.update,
      result: SavedViewSchema,
      openapi: openapi("Update one of the caller's saved views (another user's view: 404)"),
      async handler(this: SavedViewsService, ctx) {
        const userId = userOf(ctx);
        const { workspaceId: _path, viewId, ...changes } = ctx.params;
        const views = inWorkspace<SavedView>(this, ctx);
        const own = { id: viewId, userId };
        const changed = await saving(() => views.update(own, changes), changes.name);
        if (!changed) throw notFound("Saved view");
        return viewOf(found(await views.findOne(own), "Saved view"), userId);
      },
    }),

    /** Delete one of the caller's views. Session. */
    remove: defineAction({
      rest: "DELETE /workspaces/:workspaceId/saved-views/:viewId",
      auth: "session",
      params: schemas.savedViews.remove,
      result: SuccessSchema,
      openapi: openapi("Delete one of the caller's saved views"),
      async handler(this: SavedViewsService, ctx) {
        const removed = await inWorkspace<SavedView>(this, ctx).remove({
          id: ctx.params.viewId,
          userId: userOf(ctx),
        });
        if (!removed) throw notFound("Saved view");
        return { success: true as const };
      },
    }),
  },
});
