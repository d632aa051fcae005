import { newId } from "../../lib/crypto";
import { DashboardWidget } from "../../models";
import type { WorkspaceId } from "../../lib/tenancy";

/** Dashboard widgets: each belongs to one member of one workspace, who alone sees and changes it. */

export const widgetView = (w: DashboardWidget) => ({
  id: w.id,
  title: w.title,
  kind: w.kind,
  endpoint: w.endpoint,
  params: w.params,
  position: w.position,
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
});

type Position = Record<string, number>;

export interface WidgetInput {
  title: string;
  kind: string;
  endpoint: string;
  params?: Record<string, unknown>;
  position?: Position;
}

/** Top to bottom, then left to right. */
const byPosition = (a: { position: Position }, b: { position: Position }) =>
  (a.position.y ?? 0) - (b.position.y ?? 0) || (a.position.x ?? 0) - (b.position.x ?? 0);

export async function listWidgets(workspaceId: WorkspaceId, userId: string) {
  const rows = await DashboardWidget.findAll({
    where: { workspaceId, userId },
    order: [
      ["createdAt", "ASC"],
      ["id", "ASC"],
    ],
  });
  return rows.map(widgetView).sort(byPosition);
}

/** Add a widget; without a position it goes below the others, full width. */
export async function createWidget(workspaceId: WorkspaceId, userId: string, input: WidgetInput) {
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
    title: input.title,
    kind: input.kind,
    endpoint: input.endpoint,
    params: input.params ?? {},
    position,
  });
  return widgetView(widget);
}

/** The fields sent replace the widget's; null when the member has no such widget. */
export async function updateWidget(
  workspaceId: WorkspaceId,
  userId: string,
  widgetId: string,
  changes: Partial<WidgetInput>,
) {
  const widget = await DashboardWidget.findOne({ where: { id: widgetId, workspaceId, userId } });
  if (!widget) return null;
  await widget.update(changes);
  return widgetView(widget);
}

/** Whether the member had such a widget. */
export async function removeWidget(workspaceId: WorkspaceId, userId: string, widgetId: string) {
  return (await DashboardWidget.destroy({ where: { id: widgetId, workspaceId, userId } })) > 0;
}
