import { newId } from "../../lib/crypto";
import { query, uniqueViolation } from "../../lib/database";
import { conflict, found, notFound } from "../../lib/errors";
import { ensureStages, getRow } from "./contacts.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Lifecycle stage definitions (`{ws}/stages`) and a contact's stage history. */

export interface StageDef {
  id: string;
  key: string;
  name: string;
  position: number;
  color: string | null;
  contactCount: number;
  createdAt: string;
  updatedAt: string;
}

interface StageRow {
  id: string;
  key: string;
  name: string;
  position: number;
  color: string | null;
  contact_count?: string;
  created_at: Date;
  updated_at: Date;
}

const view = (r: StageRow): StageDef => ({
  id: r.id,
  key: r.key,
  name: r.name,
  position: r.position,
  color: r.color,
  contactCount: Number(r.contact_count ?? 0),
  createdAt: new Date(r.created_at).toISOString(),
  updatedAt: new Date(r.updated_at).toISOString(),
});

async function one(workspaceId: WorkspaceId, stageId: string): Promise<StageDef> {
  const rows = await query<StageRow>(
    workspaceId,
    `SELECT s.*, (SELECT count(*) FROM contacts c WHERE c.workspace_id = s.workspace_id AND c.stage = s.key) AS contact_count
       FROM lifecycle_stages s WHERE s.workspace_id = $1 AND s.id = $2`,
    [stageId],
  );
  if (!rows[0]) throw notFound("Stage");
  return view(rows[0]);
}

/** Stages in ladder order, each with its contact count (the defaults on first use). */
export async function listStages(workspaceId: WorkspaceId): Promise<StageDef[]> {
  await ensureStages(workspaceId);
  const rows = await query<StageRow>(
    workspaceId,
    `SELECT s.*, coalesce(c.n, 0) AS contact_count
       FROM lifecycle_stages s
       LEFT JOIN (SELECT stage, count(*) AS n FROM contacts WHERE workspace_id = $1 AND stage IS NOT NULL GROUP BY stage) c ON c.stage = s.key
      WHERE s.workspace_id = $1 ORDER BY s.position, s.key`,
  );
  return rows.map(view);
}

export async function createStage(
  workspaceId: WorkspaceId,
  input: { key: string; name: string; position?: number; color?: string },
): Promise<StageDef> {
  await ensureStages(workspaceId);
  const id = newId();
  try {
    await query(
      workspaceId,
      `INSERT INTO lifecycle_stages (id, workspace_id, key, name, position, color)
       VALUES ($2, $1, $3, $4, coalesce($5, (SELECT coalesce(max(position) + 1, 0) FROM lifecycle_stages WHERE workspace_id = $1)), $6)`,
      [id, input.key, input.name, input.position ?? null, input.color ?? null],
    );
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`A stage with key '${input.key}' exists`);
    throw err;
  }
  return one(workspaceId, id);
}

/** Rename, reorder or recolour; the key is fixed (contacts refer to it). */
export async function updateStage(
  workspaceId: WorkspaceId,
  stageId: string,
  input: { name?: string; position?: number; color?: string | null },
): Promise<StageDef> {
  const rows = await query(
    workspaceId,
    `UPDATE lifecycle_stages SET name = coalesce($3, name), position = coalesce($4, position),
            color = CASE WHEN $5::boolean THEN $6 ELSE color END, updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [stageId, input.name ?? null, input.position ?? null, input.color !== undefined, input.color ?? null],
  );
  if (!rows.length) throw notFound("Stage");
  return one(workspaceId, stageId);
}

/** Delete a stage no contact is in (409 otherwise: move them first, e.g. with a bulk setStage). */
export async function deleteStage(workspaceId: WorkspaceId, stageId: string): Promise<void> {
  const stage = await one(workspaceId, stageId);
  if (stage.contactCount > 0)
    throw conflict(`${stage.contactCount} contacts are in the stage '${stage.key}'; move them first`);
  await query(workspaceId, `DELETE FROM lifecycle_stages WHERE workspace_id = $1 AND id = $2`, [stageId]);
}

export interface StageChange {
  id: string;
  from: string | null;
  to: string | null;
  reason: string | null;
  changedBy: { type: string; id: string | null };
  createdAt: string;
}

export async function stageHistory(
  workspaceId: WorkspaceId,
  contactId: string,
): Promise<{ stage: string | null; history: StageChange[] }> {
  const row = found(await getRow(workspaceId, contactId), "Contact");
  const rows = await query<{
    id: string;
    from_stage: string | null;
    to_stage: string | null;
    reason: string | null;
    changed_by_type: string;
    changed_by_id: string | null;
    created_at: Date;
  }>(
    workspaceId,
    `SELECT * FROM contact_stage_history WHERE workspace_id = $1 AND contact_id = $2 ORDER BY created_at DESC, id DESC LIMIT 500`,
    [contactId],
  );
  return {
    stage: row.stage,
    history: rows.map((r) => ({
      id: r.id,
      from: r.from_stage,
      to: r.to_stage,
      reason: r.reason,
      changedBy: { type: r.changed_by_type, id: r.changed_by_id },
      createdAt: new Date(r.created_at).toISOString(),
    })),
  };
}
