import { newId } from "../../lib/crypto";
import { Binds, query, queryAcrossWorkspacesPrepared } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { FocusItemView } from "./content.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** The SQL of focus items, scoped by workspace. */

interface FocusRow {
  id: string;
  name: string;
  type: FocusItemView["type"];
  content: string;
  form_id: string | null;
  trigger: FocusItemView["trigger"];
  rules: FocusItemView["rules"];
  active: boolean;
  views: number;
  conversions: number;
  created_at: Date;
  updated_at: Date;
}

export type FocusInput = Omit<FocusItemView, "id" | "views" | "conversions" | "createdAt" | "updatedAt">;

const view = (r: FocusRow): FocusItemView => ({
  id: r.id,
  name: r.name,
  type: r.type,
  content: r.content,
  formId: r.form_id,
  trigger: r.trigger,
  rules: r.rules,
  active: r.active,
  views: r.views,
  conversions: r.conversions,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export async function listItems(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: { active?: boolean; type?: string },
): Promise<Page<FocusItemView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filter.active !== undefined) where.push(`active = ${binds.p(filter.active)}`);
  if (filter.type) where.push(`type = ${binds.p(filter.type)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM focus_items WHERE ${clause}`, orderBy: "created_at DESC, id DESC" },
    binds.values,
    page,
    view,
  );
}

export async function findItem(workspaceId: WorkspaceId, id: string): Promise<FocusItemView | null> {
  const [row] = await query<FocusRow>(
    workspaceId,
    `SELECT * FROM focus_items WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
  return row ? view(row) : null;
}

/** An item's columns from name to active, in the order both writes bind them ($3 to $9). */
const columnsOf = (input: FocusInput) => [
  input.name,
  input.type,
  input.content,
  input.formId,
  JSON.stringify(input.trigger),
  JSON.stringify(input.rules),
  input.active,
];

export async function insertItem(workspaceId: WorkspaceId, input: FocusInput): Promise<string> {
  const id = newId();
  await query(
    workspaceId,
    `INSERT INTO focus_items (id, workspace_id, name, type, content, form_id, trigger, rules, active)
     VALUES ($2, $1, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9)`,
    [id, ...columnsOf(input)],
  );
  return id;
}

export async function updateItem(workspaceId: WorkspaceId, id: string, input: FocusInput): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `UPDATE focus_items SET name = $3, type = $4, content = $5, form_id = $6, trigger = $7::jsonb, rules = $8::jsonb,
            active = $9, updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id, ...columnsOf(input)],
  );
  return rows.length > 0;
}

export async function deleteItem(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `DELETE FROM focus_items WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

/** The workspace's active focus items (the website script's config). */
export async function activeItems(workspaceId: WorkspaceId): Promise<FocusItemView[]> {
  const rows = await query<FocusRow>(
    workspaceId,
    `SELECT * FROM focus_items WHERE workspace_id = $1 AND active ORDER BY created_at, id LIMIT 200`,
  );
  return rows.map(view);
}

/** The website script showed an item (`views`) or its form was submitted from it (`conversions`). */
export async function countShown(
  workspaceId: WorkspaceId,
  id: string,
  counter: "views" | "conversions",
): Promise<void> {
  await query(
    workspaceId,
    `UPDATE focus_items SET ${counter} = ${counter} + 1 WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
}

/**
 * The version of each workspace's script configuration, in one statement:
 * its focus items' and forms' count and last change (forms are read for
 * their version only; their list comes from the forms service).
 */
export async function scriptConfigVersions(workspaceIds: WorkspaceId[]): Promise<Map<string, string>> {
  const rows = await queryAcrossWorkspacesPrepared<{ workspace_id: WorkspaceId; version: string }>(
    `SELECT w.id AS workspace_id,
            (SELECT count(*) || '/' || COALESCE(max(updated_at)::text, '') FROM focus_items f WHERE f.workspace_id = w.id)
            || '|' ||
            (SELECT count(*) || '/' || COALESCE(max(updated_at)::text, '') FROM forms f WHERE f.workspace_id = w.id) AS version
       FROM unnest($1::text[]) AS w(id)`,
    [workspaceIds],
  );
  return new Map(rows.map((r) => [r.workspace_id, r.version]));
}
