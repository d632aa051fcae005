import { Op } from "sequelize";
import { uniqueViolation } from "../../lib/database";
import { newId } from "../../lib/crypto";
import { conflict, fieldError } from "../../lib/errors";
import { DashboardWidget, SavedView } from "../../models";
import { findPipeline } from "./pipelines.repo";

/** Saved views and dashboard widgets: both belong to one user of one workspace. */

export const viewView = (v: SavedView, userId: string) => ({
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

interface ViewInput {
  name?: string;
  resource?: string;
  filters?: Record<string, unknown>;
  sort?: string | null;
  columns?: string[];
  shared?: boolean;
}

async function saving<T>(work: () => Promise<T>, name: string | undefined): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`You already have a view named '${name}' for this list`);
    throw err;
  }
}

/** The caller's views and the views others shared, by resource and name. */
export async function listViews(workspaceId: string, userId: string, resource?: string) {
  const rows = await SavedView.findAll({
    where: { workspaceId, ...(resource ? { resource } : {}), [Op.or]: [{ userId }, { shared: true }] },
    order: [
      ["resource", "ASC"],
      ["name", "ASC"],
      ["id", "ASC"],
    ],
  });
  return rows.map((v) => viewView(v, userId));
}

export async function createView(
  workspaceId: string,
  userId: string,
  input: ViewInput & { name: string; resource: string },
) {
  return saving(async () => {
    const view = await SavedView.create({
      filters: {},
      columns: [],
      ...input,
      id: newId(),
      workspaceId,
      userId,
    });
    return viewView(view, userId);
  }, input.name);
}

/** Only the owner changes or deletes a view; another user's view is not found (null). */
const findOwnView = (workspaceId: string, userId: string, viewId: string) =>
  SavedView.findOne({ where: { id: viewId, workspaceId, userId } });

export async function updateView(workspaceId: string, userId: string, viewId: string, input: ViewInput) {
  const view = await findOwnView(workspaceId, userId, viewId);
  if (!view) return null;
  for (const [key, value] of Object.entries(input)) if (value !== undefined) view.set(key, value);
  view.changed("updatedAt", true);
  return saving(async () => viewView(await view.save(), userId), input.name);
}

export async function deleteView(workspaceId: string, userId: string, viewId: string): Promise<boolean> {
  return (await SavedView.destroy({ where: { id: viewId, workspaceId, userId } })) > 0;
}

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

/**
 * What a widget's config points at and cannot be found: a saved view visible
 * to the caller, a pipeline of the workspace. Null when everything is there.
 */
export async function missingWidgetTarget(
  workspaceId: string,
  userId: string,
  type: string,
  config: Record<string, unknown>,
): Promise<"Saved view" | "Pipeline" | null> {
  if (type === "saved_view") {
    if (typeof config.viewId !== "string")
      throw fieldError("config.viewId", "is required for a saved_view widget");
    const visible = await SavedView.count({
      where: { id: config.viewId, workspaceId, [Op.or]: [{ userId }, { shared: true }] },
    });
    if (!visible) return "Saved view";
  }
  if (config.pipelineId !== undefined) {
    if (typeof config.pipelineId !== "string") throw fieldError("config.pipelineId", "must be a pipeline id");
    if (!(await findPipeline(workspaceId, config.pipelineId))) return "Pipeline";
  }
  return null;
}

/** Add a widget (its targets checked by `missingWidgetTarget`); without a position it goes below the others, full width. */
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
