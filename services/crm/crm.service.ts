import { Type } from "@sinclair/typebox";
import { holdsPermission } from "../../lib/access";
import { defineAction, defineService } from "../../lib/define-service";
import { ANALYTICS_ENDPOINTS } from "../../lib/analytics";
import { found, notFound } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { userOf, workspaceOf } from "../../lib/tenancy";
import { queueStatsAction } from "../../lib/queue-stats";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import {
  NotificationSchema,
  results,
  schemas,
  SEARCH_TYPES,
  SearchResultSchema,
  SuccessSchema,
  WidgetSchema,
} from "./crm.schemas";
import { searchTypes } from "./crm.rules";
import * as notifications from "./notifications.repo";
import { search, SEARCH_LIMIT } from "./search.repo";
import { dueReminderQueueFigures, notifyDueTasks } from "./tasks.repo";
import { withResults } from "./widget-data";
import * as widgets from "./widgets.repo";

/** How often each replica runs the due check on its own (the cron tick may run it more often). */

const tagged = (tag: string) => (summary: string) => ({ tags: [tag], summary });
const notificationDoc = tagged("Notifications");
const dashboardDoc = tagged("Dashboard");

/**
 * The signed-in user's CRM surface (notifications and dashboard
 * widgets: session only, each user sees their own), the workspace's search,
 * and the due-task check the cron tick runs. The activity feed is the events
 * area's (`events.activity`).
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

    /** Internal (timer, operators' `queues`): due-date reminders to make, set in this process's gauges too. */
    queueStats: queueStatsAction(async () => [await dueReminderQueueFigures()]),

    /** The caller's dashboard widgets, top to bottom. Session. */
    listWidgets: defineAction({
      rest: "GET /workspaces/:workspaceId/dashboard-widgets",
      auth: "session",
      params: schemas.widgets.list,
      result: results.widgets,
      openapi: dashboardDoc(
        "The caller's dashboard widgets in layout order (top to bottom, then left to right); data=true adds each one's result (its analytics answer) or error",
      ),
      handler: async (ctx) => {
        const list = await widgets.listWidgets(workspaceOf(ctx), userOf(ctx));
        return ctx.params.data ? withResults(ctx, workspaceOf(ctx), list) : list;
      },
    }),

    /** Add a widget to the caller's dashboard. Session. */
    createWidget: defineAction({
      rest: "POST /workspaces/:workspaceId/dashboard-widgets",
      auth: "session",
      params: schemas.widgets.create,
      status: 201,
      result: WidgetSchema,
      openapi: dashboardDoc(
        `Add a dashboard widget {title, kind, endpoint, params?, position?: {x, y, w, h}}; endpoint is an analytics answer (${ANALYTICS_ENDPOINTS.join(", ")}); without a position it goes below the others`,
      ),
      handler: (ctx) => widgets.createWidget(workspaceOf(ctx), userOf(ctx), ctx.params),
    }),

    /** Change one of the caller's widgets (fields sent replace theirs). Session. */
    updateWidget: defineAction({
      rest: "PATCH /workspaces/:workspaceId/dashboard-widgets/:widgetId",
      auth: "session",
      params: schemas.widgets.update,
      result: WidgetSchema,
      openapi: dashboardDoc("Change a dashboard widget's title, kind, endpoint, params or position"),
      handler: async (ctx) => {
        const { workspaceId: _ws, widgetId, ...changes } = ctx.params;
        return found(await widgets.updateWidget(workspaceOf(ctx), userOf(ctx), widgetId, changes), "Widget");
      },
    }),

    /** Remove one of the caller's widgets. Session. */
    removeWidget: defineAction({
      rest: "DELETE /workspaces/:workspaceId/dashboard-widgets/:widgetId",
      auth: "session",
      params: schemas.widgets.remove,
      result: SuccessSchema,
      openapi: dashboardDoc("Remove a dashboard widget"),
      async handler(ctx) {
        if (!(await widgets.removeWidget(workspaceOf(ctx), userOf(ctx), ctx.params.widgetId)))
          throw notFound("Widget");
        return { success: true as const };
      },
    }),

    /** One query across the kinds of record the caller may read. Any member or key. */
    search: defineAction({
      rest: "GET /workspaces/:workspaceId/search",
      auth: "any",
      params: schemas.search,
      result: SearchResultSchema,
      openapi: dashboardDoc(
        `Search the workspace (q: 2 characters or more): {results: [{type, id, title, subtitle}]}, at most ${SEARCH_LIMIT} per type, prefix matches first; types=${SEARCH_TYPES.join(",")} (comma separated) narrows it; contacts by email, name or phone`,
      ),
      handler(ctx) {
        const types = searchTypes(ctx.params.types);
        return search(workspaceOf(ctx), ctx.params.q, {
          types,
          may: (p) => holdsPermission(ctx.meta, p),
        });
      },
    }),
  },
});
