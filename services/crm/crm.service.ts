import type { ServiceSchema } from "moleculer";
import { roleHasPermission, scopesAllow } from "../../lib/access";
import { fieldError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { userOf, workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Notification } from "../../models";
import { listActivity } from "./activity.repo";
import {
  ActivitySchema,
  answers,
  listOf,
  NotificationSchema,
  pageOf,
  SavedViewSchema,
  SearchResultSchema,
  SuccessSchema,
  WidgetSchema,
} from "./crm.openapi";
import { schemas, SEARCH_TYPES } from "./crm.schemas";
import * as notifications from "./notifications.repo";
import { search } from "./search.repo";
import { notifyDueTasks } from "./tasks.repo";
import * as views from "./views.repo";

/** Validated params arrive typed by the schema; handlers read them through this alias. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

/** How often each replica runs the due check on its own (the cron tick may run it more often). */
const DUE_CHECK_INTERVAL_MS = 60_000;

const tagged = (tag: string) => (summary: string, responses: Record<string, unknown>) => ({
  tags: [tag],
  summary,
  responses,
});
const notificationDoc = tagged("Notifications");
const viewDoc = tagged("Saved views");
const dashboardDoc = tagged("Dashboard");

/** Whether the caller holds a permission (role for a person, scopes for an API key). */
function callerMay(ctx: Ctx, permission: string): boolean {
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
const CrmService: ServiceSchema = {
  name: "crm",
  mixins: [DbMixin(Notification)],
  settings: { rest: "/" },

  actions: {
    /** The caller's notifications, newest first, with the unread count. Session. */
    listNotifications: {
      rest: "GET /workspaces/:workspaceId/notifications",
      auth: "session",
      params: schemas.notifications.list,
      openapi: notificationDoc(
        "The caller's notifications, newest first (filters unread, type); the envelope adds unreadCount",
        answers(pageOf(NotificationSchema, { unreadCount: { type: "integer" } })),
      ),
      handler: (ctx: Ctx) =>
        notifications.listNotifications(workspaceOf(ctx), userOf(ctx), ctx.params, pageRequest(ctx.params)),
    },

    /** Mark every unread notification of the caller read. Session. */
    markAllNotificationsRead: {
      rest: "PATCH /workspaces/:workspaceId/notifications/mark-all-read",
      auth: "session",
      params: schemas.notifications.markAllRead,
      openapi: notificationDoc(
        "Mark all the caller's notifications read; answers {updated}",
        answers({ type: "object", properties: { updated: { type: "integer" } } }),
      ),
      handler: (ctx: Ctx) => notifications.markAllRead(workspaceOf(ctx), userOf(ctx)),
    },

    /** Mark one of the caller's notifications read or unread. Session. */
    updateNotification: {
      rest: "PATCH /workspaces/:workspaceId/notifications/:notificationId",
      auth: "session",
      params: schemas.notifications.update,
      openapi: notificationDoc("Mark a notification read or unread ({read})", answers(NotificationSchema)),
      handler: (ctx: Ctx) =>
        notifications.setRead(workspaceOf(ctx), userOf(ctx), ctx.params.notificationId, ctx.params.read),
    },

    /** Delete one of the caller's notifications. Session. */
    removeNotification: {
      rest: "DELETE /workspaces/:workspaceId/notifications/:notificationId",
      auth: "session",
      params: schemas.notifications.remove,
      openapi: notificationDoc("Delete a notification", answers(SuccessSchema)),
      async handler(ctx: Ctx) {
        await notifications.deleteNotification(workspaceOf(ctx), userOf(ctx), ctx.params.notificationId);
        return { success: true };
      },
    },

    /** Internal (cron tick, timers): notify assignees of tasks now due, once each. Answers how many were made. */
    notifyDueTasks: {
      handler: () => notifyDueTasks(),
    },

    /** The caller's saved views and those others shared. Session. */
    listSavedViews: {
      rest: "GET /workspaces/:workspaceId/saved-views",
      auth: "session",
      params: schemas.savedViews.list,
      openapi: viewDoc(
        "The caller's saved views and the views other members shared (filter by resource)",
        answers(listOf(SavedViewSchema)),
      ),
      handler: (ctx: Ctx) => views.listViews(workspaceOf(ctx), userOf(ctx), ctx.params.resource),
    },

    /** Save a named list filter for one resource. Session. */
    createSavedView: {
      rest: "POST /workspaces/:workspaceId/saved-views",
      auth: "session",
      params: schemas.savedViews.create,
      openapi: viewDoc(
        "Save a named list view {name, resource, filters, sort, columns, shared} (name unique per user and resource: 409)",
        answers(SavedViewSchema, 201),
      ),
      async handler(ctx: Ctx) {
        const view = await views.createView(
          workspaceOf(ctx),
          userOf(ctx),
          ctx.params as { name: string; resource: string },
        );
        ctx.meta.$statusCode = 201;
        return view;
      },
    },

    /** Change one of the caller's views. Session. */
    updateSavedView: {
      rest: "PATCH /workspaces/:workspaceId/saved-views/:viewId",
      auth: "session",
      params: schemas.savedViews.update,
      openapi: viewDoc(
        "Update one of the caller's saved views (another user's view: 404)",
        answers(SavedViewSchema),
      ),
      handler: (ctx: Ctx) => views.updateView(workspaceOf(ctx), userOf(ctx), ctx.params.viewId, ctx.params),
    },

    /** Delete one of the caller's views. Session. */
    removeSavedView: {
      rest: "DELETE /workspaces/:workspaceId/saved-views/:viewId",
      auth: "session",
      params: schemas.savedViews.remove,
      openapi: viewDoc("Delete one of the caller's saved views", answers(SuccessSchema)),
      async handler(ctx: Ctx) {
        await views.deleteView(workspaceOf(ctx), userOf(ctx), ctx.params.viewId);
        return { success: true };
      },
    },

    /** The caller's dashboard widgets, top to bottom. Session. */
    listWidgets: {
      rest: "GET /workspaces/:workspaceId/dashboard-widgets",
      auth: "session",
      params: schemas.widgets.list,
      openapi: dashboardDoc("The caller's dashboard widgets in layout order", answers(listOf(WidgetSchema))),
      handler: (ctx: Ctx) => views.listWidgets(workspaceOf(ctx), userOf(ctx)),
    },

    /** Add a widget to the caller's dashboard. Session. */
    createWidget: {
      rest: "POST /workspaces/:workspaceId/dashboard-widgets",
      auth: "session",
      params: schemas.widgets.create,
      openapi: dashboardDoc(
        "Add a dashboard widget {type, title?, config?, position?: {x, y, w, h}} (saved_view needs config.viewId; config.pipelineId must exist)",
        answers(WidgetSchema, 201),
      ),
      async handler(ctx: Ctx) {
        const widget = await views.createWidget(
          workspaceOf(ctx),
          userOf(ctx),
          ctx.params as { type: string },
        );
        ctx.meta.$statusCode = 201;
        return widget;
      },
    },

    /** Recent activity of the workspace (the audit log without access and settings entries). contacts.read. */
    activity: {
      rest: "GET /workspaces/:workspaceId/activity",
      auth: "any",
      permission: "contacts.read",
      params: schemas.activity,
      openapi: dashboardDoc(
        "Recent activity across the workspace, newest first (filters type (prefix with *), targetType, targetId, actorId, from, to)",
        answers(pageOf(ActivitySchema)),
      ),
      handler: (ctx: Ctx) => listActivity(workspaceOf(ctx), ctx.params, pageRequest(ctx.params)),
    },

    /** One query across contacts, companies and deals the caller may read. Any member or key. */
    search: {
      rest: "GET /workspaces/:workspaceId/search",
      auth: "any",
      params: schemas.search,
      openapi: dashboardDoc(
        `Search contacts, companies and deals at once: {query, data: [{type, id, title, subtitle, score, updatedAt}], totals: {type: n}}; types=${SEARCH_TYPES.join(",")} (comma separated), limit per type (default 5, max 20)`,
        answers(SearchResultSchema),
      ),
      handler(ctx: Ctx) {
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
    },
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
};

export default CrmService;
