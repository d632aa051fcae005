import { QueryTypes } from "sequelize";
import { newId } from "../../lib/crypto";
import { database, uniqueViolation } from "../../lib/database";
import { conflict, found, notFound } from "../../lib/errors";
import { ensureStages, getRow } from "./contacts.repo";

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

async function one(workspaceId: string, stageId: string): Promise<StageDef> {
  const sequelize = await database();
  const rows = await sequelize.query<StageRow>(
    `SELECT s.*, (SELECT count(*) FROM contacts c WHERE c.workspace_id = s.workspace_id AND c.stage = s.key) AS contact_count
       FROM lifecycle_stages s WHERE s.workspace_id = $1 AND s.id = $2`,
    { bind: [workspaceId, stageId], type: QueryTypes.SELECT },
  );
  if (!rows[0]) throw notFound("Stage");
  return view(rows[0]);
}

/** Stages in ladder order, each with its contact count (the defaults on first use). */
export async function listStages(workspaceId: string): Promise<StageDef[]> {
  await ensureStages(workspaceId);
  const sequelize = await database();
  const rows = await sequelize.query<StageRow>(
    `SELECT s.*, coalesce(c.n, 0) AS contact_count
       FROM lifecycle_stages s
       LEFT JOIN (SELECT stage, count(*) AS n FROM contacts WHERE workspace_id = $1 AND stage IS NOT NULL GROUP BY stage) c ON c.stage = s.key
      WHERE s.workspace_id = $1 ORDER BY s.position, s.key`,
    { bind: [workspaceId], type: QueryTypes.SELECT },
  );
  return rows.map(view);
}

export async function createStage(
  workspaceId: string,
  input: { key: string; name: string; position?: number; color?: string },
): Promise<StageDef> {
  await ensureStages(workspaceId);
  const sequelize = await database();
  const id = newId();
  try {
    await sequelize.query(
      `INSERT INTO lifecycle_stages (id, workspace_id, key, name, position, color)
       VALUES ($1, $2, $3, $4, coalesce($5, (SELECT coalesce(max(position) + 1, 0) FROM lifecycle_stages WHERE workspace_id = $2)), $6)`,
      { bind: [id, workspaceId, input.key, input.name, input.position ?? null, input.color ?? null] },
    );
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`A stage with key '${input.key}' exists`);
    throw err;
  }
  return one(workspaceId, id);
}

/** Rename, reorder or recolour; the key is fixed (contacts refer to it). */
export async function updateStage(
  workspaceId: string,
  stageId: string,
  input: { name?: string; position?: number; color?: string | null },
): Promise<StageDef> {
  const sequelize = await database();
  const rows = await sequelize.query(
    `UPDATE lifecycle_stages SET name = coalesce($3, name), position = coalesce($4, position),
            color = CASE WHEN $5::boolean THEN $6 ELSE color END, updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    {
      bind: [
        workspaceId,
        stageId,
        input.name ?? null,
        input.position ?? null,
        input.color !== undefined,
        input.color ?? null,
      ],
      type: QueryTypes.SELECT,
    },
  );
  if (!rows.length) throw notFound("Stage");
  return one(workspaceId, stageId);
}

/** Delete a stage no contact is in (409 otherwise: move them first, e.g. with a bulk setStage). */
export async function deleteStage(workspaceId: string, stageId: string): Promise<void> {
  const stage = await one(workspaceId, stageId);
  if (stage.contactCount > 0)
    throw conflict(`${stage.contactCount} contacts are in the stage '${stage.key}'; move them first`);
  const sequelize = await database();
  await sequelize.query(`DELETE FROM lifecycle_stages WHERE workspace_id = $1 AND id = $2`, {
    bind: [workspaceId, stageId],
  });
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
  workspaceId: string,
  contactId: string,
): Promise<{ stage: string | null; history: StageChange[] }> {
  const row = found(await getRow(workspaceId, contactId), "Contact");
  const sequelize = await database();
  const rows = await sequelize.query<{
    id: string;
    from_stage: string | null;
    to_stage: string | null;
    reason: string | null;
    changed_by_type: string;
    changed_by_id: string | null;
    created_at: Date;
  }>(
    `SELECT * FROM contact_stage_history WHERE workspace_id = $1 AND contact_id = $2 ORDER BY created_at DESC, id DESC LIMIT 500`,
    { bind: [workspaceId, contactId], type: QueryTypes.SELECT },
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
