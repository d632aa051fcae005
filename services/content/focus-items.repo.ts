import { newId } from "../../lib/crypto";
import { Binds, queryPrepared, selectRows } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { FocusItemView } from "./content.schemas";

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
  workspaceId: string,
  page: PageRequest,
  filter: { active?: boolean; type?: string },
): Promise<Page<FocusItemView>> {
  const binds = new Binds([workspaceId]);
  const where = ["workspace_id = $1"];
  if (filter.active !== undefined) where.push(`active = ${binds.p(filter.active)}`);
  if (filter.type) where.push(`type = ${binds.p(filter.type)}`);
  const clause = where.join(" AND ");
  return selectPage(
    { select: `SELECT * FROM focus_items WHERE ${clause}`, orderBy: "created_at DESC, id DESC" },
    binds.values,
    page,
    view,
  );
}

export async function findItem(workspaceId: string, id: string): Promise<FocusItemView | null> {
  const [row] = await selectRows<FocusRow>(`SELECT * FROM focus_items WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    id,
  ]);
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

export async function insertItem(workspaceId: string, input: FocusInput): Promise<string> {
  const id = newId();
  await selectRows(
    `INSERT INTO focus_items (id, workspace_id, name, type, content, form_id, trigger, rules, active)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9)`,
    [id, workspaceId, ...columnsOf(input)],
  );
  return id;
}

export async function updateItem(workspaceId: string, id: string, input: FocusInput): Promise<boolean> {
  const rows = await selectRows(
    `UPDATE focus_items SET name = $3, type = $4, content = $5, form_id = $6, trigger = $7::jsonb, rules = $8::jsonb,
            active = $9, updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [workspaceId, id, ...columnsOf(input)],
  );
  return rows.length > 0;
}

export async function deleteItem(workspaceId: string, id: string): Promise<boolean> {
  const rows = await selectRows(`DELETE FROM focus_items WHERE workspace_id = $1 AND id = $2 RETURNING id`, [
    workspaceId,
    id,
  ]);
  return rows.length > 0;
}

/** The workspace's active focus items (the website script's config). */
export async function activeItems(workspaceId: string): Promise<FocusItemView[]> {
  const rows = await selectRows<FocusRow>(
    `SELECT * FROM focus_items WHERE workspace_id = $1 AND active ORDER BY created_at, id LIMIT 200`,
    [workspaceId],
  );
  return rows.map(view);
}

/** The website script showed an item (`views`) or its form was submitted from it (`conversions`). */
export async function countShown(
  workspaceId: string,
  id: string,
  counter: "views" | "conversions",
): Promise<void> {
  await selectRows(`UPDATE focus_items SET ${counter} = ${counter} + 1 WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    id,
  ]);
}

/**
 * The version of each workspace's script configuration, in one statement:
 * its focus items' and forms' count and last change (forms are read for
 * their version only; their list comes from the forms service).
 */
export async function scriptConfigVersions(workspaceIds: string[]): Promise<Map<string, string>> {
  const rows = await queryPrepared<{ workspace_id: string; version: string }>(
    `SELECT w.id AS workspace_id,
            (SELECT count(*) || '/' || COALESCE(max(updated_at)::text, '') FROM focus_items f WHERE f.workspace_id = w.id)
            || '|' ||
            (SELECT count(*) || '/' || COALESCE(max(updated_at)::text, '') FROM forms f WHERE f.workspace_id = w.id) AS version
       FROM unnest($1::text[]) AS w(id)`,
    [workspaceIds],
  );
  return new Map(rows.map((r) => [r.workspace_id, r.version]));
}
