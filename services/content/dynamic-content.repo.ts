import { newId } from "../../lib/crypto";
import { Binds, likeEscape, query } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { DynamicContentView } from "./content.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** The SQL of dynamic content slots, scoped by workspace. */

interface SlotRow {
  id: string;
  name: string;
  slot: string;
  default_content: string;
  variants: DynamicContentView["variants"];
  created_at: Date;
  updated_at: Date;
}

const view = (r: SlotRow): DynamicContentView => ({
  id: r.id,
  name: r.name,
  slot: r.slot,
  defaultContent: r.default_content,
  variants: r.variants,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export async function listSlots(
  workspaceId: WorkspaceId,
  page: PageRequest,
  search: string | undefined,
): Promise<Page<DynamicContentView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (search) {
    const like = binds.p(`%${likeEscape(search)}%`);
    where.push(`(name ILIKE ${like} OR slot ILIKE ${like})`);
  }
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM dynamic_content WHERE ${clause}`, orderBy: "slot, id" },
    binds.values,
    page,
    view,
  );
}

/** Create the slot or replace what it holds; answers it and whether it was new. */
export async function upsertSlot(
  workspaceId: WorkspaceId,
  input: { name: string; slot: string; defaultContent: string; variants: DynamicContentView["variants"] },
): Promise<{ slot: DynamicContentView; created: boolean }> {
  const [row] = await query<SlotRow & { created: boolean }>(
    workspaceId,
    `INSERT INTO dynamic_content (id, workspace_id, name, slot, default_content, variants)
     VALUES ($2, $1, $3, $4, $5, $6::jsonb)
     ON CONFLICT (workspace_id, slot) DO UPDATE
        SET name = EXCLUDED.name, default_content = EXCLUDED.default_content, variants = EXCLUDED.variants,
            updated_at = now()
     RETURNING *, (xmax = 0) AS created`,
    [newId(), input.name, input.slot, input.defaultContent, JSON.stringify(input.variants)],
  );
  return { slot: view(row), created: row.created };
}

export async function slotsNamed(workspaceId: WorkspaceId, slots: string[]): Promise<DynamicContentView[]> {
  const rows = await query<SlotRow>(
    workspaceId,
    `SELECT * FROM dynamic_content WHERE workspace_id = $1 AND slot = ANY($2::text[])`,
    [slots],
  );
  return rows.map(view);
}
