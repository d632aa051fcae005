import { Type } from "@sinclair/typebox";
import { roleHasPermission, scopesAllow } from "../../lib/access";
import { defineAction, defineService } from "../../lib/define-service";
import { fieldError, found, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { userOf, workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { listActivity } from "./activity.repo";
import {
  NotificationSchema,
  results,
  SavedViewSchema,
  schemas,
  SEARCH_TYPES,
  SearchResultSchema,
  SuccessSchema,
  WidgetSchema,
} from "./crm.schemas";
import { asDate } from "./crm.shared";
import * as notifications from "./notifications.repo";
import { search } from "./search.repo";
import { notifyDueTasks } from "./tasks.repo";
import * as views from "./views.repo";

/** How often each replica runs the due check on its own (the cron tick may run it more often). */
const DUE_CHECK_INTERVAL_MS = 60_000;

const tagged = (tag: string) => (summary: string) => ({ tags: [tag], summary });
const notificationDoc = tagged("Notifications");
const viewDoc = tagged("Saved views");
const dashboardDoc = tagged("Dashboard");

/** Whether the caller holds a permission (role for a person, scopes for an API key). */
function callerMay(ctx: AppContext<object>, permission: string): boolean {
  const p = ctx.meta.principal;
  if (p?.kind === "system") return true;
  if (p?.kind === "apiKey") return scopesAllow(p.scopes, permission);
  return ctx.meta.role !== undefined && roleHasPermission(ctx.meta.role, permission);
}

/**
 * The signed-in user's CRM surface (notifications, saved views, dashboard
 * widgets: session only, each user sees their own), the workspace's activity
 * feed and search, and the due-task check the cron tick runs.
 */
export default defineService({
  name: "crm",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** The caller's notifications, newest first, with the unread count. Session. */
    listNotifications: defineAction({
      rest: "GET /workspaces/:workspaceId/notifications",
      auth: "session",
      params: schemas.notifications.list,
      result: results.notifications,
      openapi: notificationDoc(
        "The caller's notifications, newest first (filters unread, type); the envelope adds unreadCount",
      ),
      handler: (ctx) =>
        notifications.listNotifications(workspaceOf(ctx), userOf(ctx), ctx.params, pageRequest(ctx.params)),
    }),

    /** Mark every unread notification of the caller read. Session. */
    markAllNotificationsRead: defineAction({
      rest: "PATCH /workspaces/:workspaceId/notifications/mark-all-read",
      auth: "session",
      params: schemas.notifications.markAllRead,
      result: results.markAllRead,
      openapi: notificationDoc("Mark all the caller's notifications read; answers {updated}"),
      handler: (ctx) => notifications.markAllRead(workspaceOf(ctx), userOf(ctx)),
    }),

    /** Mark one of the caller's notifications read or unread. Session. */
    updateNotification: defineAction({
      rest: "PATCH /workspaces/:workspaceId/notifications/:notificationId",
      auth: "session",
      params: schemas.notifications.update,
      result: NotificationSchema,
      openapi: notificationDoc("Mark a notification read or unread ({read})"),
      handler: async (ctx) =>
        found(
          await notifications.setRead(
            workspaceOf(ctx),
            userOf(ctx),
            ctx.params.notificationId,
            ctx.params.read,
          ),
          "Notification",
        ),
    }),

    /** Delete one of the caller's notifications. Session. */
    removeNotification: defineAction({
      rest: "DELETE /workspaces/:workspaceId/notifications/:notificationId",
      auth: "session",
      params: schemas.notifications.remove,
      result: SuccessSchema,
      openapi: notificationDoc("Delete a notification"),
      async handler(ctx) {
        if (
          !(await notifications.deleteNotification(workspaceOf(ctx), userOf(ctx), ctx.params.notificationId))
        )
          throw notFound("Notification");
        return { success: true as const };
      },
    }),

    /** Internal (cron tick, timers): notify assignees of tasks now due, once each. Answers how many were made. */
    notifyDueTasks: defineAction({
      handler: () => notifyDueTasks(),
    }),

    /** The caller's saved views and those others shared. Session. */
    listSavedViews: defineAction({
      rest: "GET /workspaces/:workspaceId/saved-views",
      auth: "session",
      params: schemas.savedViews.list,
      result: Type.Array(SavedViewSchema),
      openapi: viewDoc("The caller's saved views and the views other members shared (filter by resource)"),
      handler: (ctx) => views.listViews(workspaceOf(ctx), userOf(ctx), ctx.params.resource),
    }),

    /** Save a named list filter for one resource. Session. */
    createSavedView: defineAction({
      rest: "POST /workspaces/:workspaceId/saved-views",
      auth: "session",
      params: schemas.savedViews.create,
      status: 201,
      result: SavedViewSchema,
      openapi: viewDoc(
        "Save a named list view {name, resource, filters, sort, columns, shared} (name unique per user and resource: 409)",
      ),
      async handler(ctx) {
        const view = await views.createView(
          workspaceOf(ctx),
          userOf(ctx),
          ctx.params as { name: string; resource: string },
        );
        return view;
      },
    }),

    /** Change one of the caller's views. Session. */
    updateSavedView: defineAction({
      rest: "PATCH /workspaces/:workspaceId/saved-views/:viewId",
      auth: "session",
      params: schemas.savedViews.update,
      result: SavedViewSchema,
      openapi: viewDoc("Update one of the caller's saved views (another user's view: 404)"),
      handler: async (ctx) =>
        found(
          await views.updateView(workspaceOf(ctx), userOf(ctx), ctx.params.viewId, ctx.params),
          "Saved view",
        ),
    }),

    /** Delete one of the caller's views. Session. */
    removeSavedView: defineAction({
      rest: "DELETE /workspaces/:workspaceId/saved-views/:viewId",
      auth: "session",
      params: schemas.savedViews.remove,
      result: SuccessSchema,
      openapi: viewDoc("Delete one of the caller's saved views"),
      async handler(ctx) {
        if (!(await views.deleteView(workspaceOf(ctx), userOf(ctx), ctx.params.viewId)))
          throw notFound("Saved view");
        return { success: true as const };
      },
    }),

    /** The caller's dashboard widgets, top to bottom. Session. */
    listWidgets: defineAction({
      rest: "GET /workspaces/:workspaceId/dashboard-widgets",
      auth: "session",
      params: schemas.widgets.list,
      result: Type.Array(WidgetSchema),
      openapi: dashboardDoc("The caller's dashboard widgets in layout order"),
      handler: (ctx) => views.listWidgets(workspaceOf(ctx), userOf(ctx)),
    }),

    /** Add a widget to the caller's dashboard. Session. */
    createWidget: defineAction({
      rest: "POST /workspaces/:workspaceId/dashboard-widgets",
      auth: "session",
      params: schemas.widgets.create,
      status: 201,
      result: WidgetSchema,
      openapi: dashboardDoc(
        "Add a dashboard widget {type, title?, config?, position?: {x, y, w, h}} (saved_view needs config.viewId; config.pipelineId must exist)",
      ),
      async handler(ctx) {
        const [workspaceId, userId] = [workspaceOf(ctx), userOf(ctx)];
        const missing = await views.missingWidgetTarget(
          workspaceId,
          userId,
          ctx.params.type,
          ctx.params.config ?? {},
        );
        if (missing) throw notFound(missing);
        return views.createWidget(workspaceId, userId, ctx.params);
      },
    }),

    /** Recent activity of the workspace (the audit log without access and settings entries). contacts.read. */
    activity: defineAction({
      rest: "GET /workspaces/:workspaceId/activity",
      auth: "any",
      permission: "contacts.read",
      params: schemas.activity,
      result: results.activity,
      openapi: dashboardDoc(
        "Recent activity across the workspace, newest first (filters type (prefix with *), targetType, targetId, actorId, from, to)",
      ),
      handler(ctx) {
        const filters = { ...ctx.params, from: asDate(ctx.params.from), to: asDate(ctx.params.to) };
        return listActivity(workspaceOf(ctx), filters, pageRequest(ctx.params));
      },
    }),

    /** One query across contacts, companies and deals the caller may read. Any member or key. */
    search: defineAction({
      rest: "GET /workspaces/:workspaceId/search",
      auth: "any",
      params: schemas.search,
      result: SearchResultSchema,
      openapi: dashboardDoc(
        `Search contacts, companies and deals at once: {query, data: [{type, id, title, subtitle, score, updatedAt}], totals: {type: n}}; types=${SEARCH_TYPES.join(",")} (comma separated), limit per type (default 5, max 20)`,
      ),
      handler(ctx) {
        const types = ctx.params.types
          ? String(ctx.params.types)
              .split(",")
              .map((t) => t.trim())
              .filter(Boolean)
          : [...SEARCH_TYPES];
        const unknown = types.find((t) => !(SEARCH_TYPES as readonly string[]).includes(t));
        if (unknown)
          throw fieldError("types", `must be a comma-separated list of ${SEARCH_TYPES.join(", ")}`);
        const limit = Math.min(20, ctx.params.limit ?? 5);
        return search(workspaceOf(ctx), ctx.params.q, { types, limit, may: (p) => callerMay(ctx, p) });
      },
    }),
  },

  started() {
    this.dueTimer = setInterval(() => {
      notifyDueTasks().catch((err) => this.logger.warn("Due-task check failed", err));
    }, DUE_CHECK_INTERVAL_MS);
    this.dueTimer.unref();
  },

  stopped() {
    clearInterval(this.dueTimer);
  },
});
