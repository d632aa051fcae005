import { Type } from "@sinclair/typebox";
import { holdsPermission } from "../../lib/access";
import { defineAction, defineService } from "../../lib/define-service";
import { fieldError, found, notFound } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { userOf, workspaceOf } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { listActivity } from "./activity.repo";
import {
  NotificationSchema,
  results,
  schemas,
  SEARCH_TYPES,
  SearchResultSchema,
  SuccessSchema,
  WidgetSchema,
} from "./crm.schemas";
import { widgetTargets } from "./crm.rules";
import { asDate } from "./crm.shared";
import * as notifications from "./notifications.repo";
import { findPipeline } from "./pipelines.repo";
import { search } from "./search.repo";
import { notifyDueTasks } from "./tasks.repo";
import * as widgets from "./widgets.repo";

/** How often each replica runs the due check on its own (the cron tick may run it more often). */

const tagged = (tag: string) => (summary: string) => ({ tags: [tag], summary });
const notificationDoc = tagged("Notifications");
const dashboardDoc = tagged("Dashboard");

/**
 * The signed-in user's CRM surface (notifications and dashboard
 * widgets: session only, each user sees their own), the workspace's activity
 * feed and search, and the due-task check the cron tick runs.
 */
export default defineService({
  name: "crm",
  mixins: [DatabaseMixin, BackgroundMixin],
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
    /** Internal (campaign steps): notify members, once per `dedupeKey` and member. */
    notifyMembers: defineAction({
      params: schemas.notifications.notifyMembers,
      result: Type.Object({ notified: Type.Integer() }),
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { userIds, dedupeKey, ...input } = ctx.params;
        let notified = 0;
        for (const userId of userIds)
          if (await notifications.notify(ws, userId, { ...input, dedupeKey: `${dedupeKey}:${userId}` }))
            notified += 1;
        return { notified };
      },
    }),

    notifyDueTasks: defineAction({
      handler: () => notifyDueTasks(),
    }),

    /** The caller's dashboard widgets, top to bottom. Session. */
    listWidgets: defineAction({
      rest: "GET /workspaces/:workspaceId/dashboard-widgets",
      auth: "session",
      params: schemas.widgets.list,
      result: Type.Array(WidgetSchema),
      openapi: dashboardDoc("The caller's dashboard widgets in layout order"),
      handler: (ctx) => widgets.listWidgets(workspaceOf(ctx), userOf(ctx)),
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
        const workspaceId = workspaceOf(ctx);
        const { viewId, pipelineId } = widgetTargets(ctx.params.type, ctx.params.config ?? {});
        if (viewId !== undefined && !(await ctx.call("savedViews.visible", { viewId })))
          throw notFound("Saved view");
        if (pipelineId !== undefined && !(await findPipeline(workspaceId, pipelineId)))
          throw notFound("Pipeline");
        return widgets.createWidget(workspaceId, userOf(ctx), ctx.params);
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
        return search(workspaceOf(ctx), ctx.params.q, {
          types,
          limit,
          may: (p) => holdsPermission(ctx.meta, p),
        });
      },
    }),
  },
});
