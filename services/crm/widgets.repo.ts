import { newId } from "../../lib/crypto";
import { DashboardWidget } from "../../models";

/** Dashboard widgets: each belongs to one user of one workspace. */

export const widgetView = (w: DashboardWidget) => ({
  id: w.id,
  type: w.type,
  title: w.title,
  config: w.config,
  position: w.position,
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
});

const DEFAULT_TITLES: Record<string, string> = {
  deals_by_stage: "Deals by stage",
  deals_won_lost: "Won and lost deals",
  pipeline_value: "Pipeline value",
  tasks_due: "Tasks due",
  recent_activity: "Recent activity",
  contacts_total: "Contacts",
  contacts_growth: "Contact growth",
  saved_view: "Saved view",
  metric: "Metric",
};

export async function listWidgets(workspaceId: string, userId: string) {
  const rows = await DashboardWidget.findAll({
    where: { workspaceId, userId },
    order: [
      ["createdAt", "ASC"],
      ["id", "ASC"],
    ],
  });
  return rows
    .map(widgetView)
    .sort((a, b) => (a.position.y ?? 0) - (b.position.y ?? 0) || (a.position.x ?? 0) - (b.position.x ?? 0));
}

/** Add a widget (its targets checked first, see `widgetTargets` in crm.rules.ts); without a position it goes below the others, full width. */
export async function createWidget(
  workspaceId: string,
  userId: string,
  input: {
    type: string;
    title?: string;
    config?: Record<string, unknown>;
    position?: Record<string, number>;
  },
) {
  let position = input.position;
  if (!position) {
    const existing = await listWidgets(workspaceId, userId);
    const bottom = Math.max(0, ...existing.map((w) => (w.position.y ?? 0) + (w.position.h ?? 0)));
    position = { x: 0, y: bottom, w: 12, h: 4 };
  }
  const widget = await DashboardWidget.create({
    id: newId(),
    workspaceId,
    userId,
    type: input.type,
    title: input.title ?? DEFAULT_TITLES[input.type] ?? input.type,
    config: input.config ?? {},
    position,
  });
  return widgetView(widget);
}
