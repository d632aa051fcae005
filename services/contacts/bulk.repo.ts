import { type Transaction } from "sequelize";
import { Binds, query } from "../../lib/database";
import type { WorkspaceId } from "../../lib/tenancy";

export type BulkAction = "tag" | "untag" | "delete" | "setStage" | "setAttribute";

export interface BulkValue {
  tag?: string;
  stage?: string | null;
  key?: string;
  value?: unknown;
}

/** The one statement of a bulk change batch (bulk.ts): only contacts it changes are locked, written and answered. */

interface Changed {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
}

/**
 * Apply `action` to the contacts of `ids` that it changes, in the caller's
 * transaction (a stage change writes its history rows in the same statement).
 * Answers the one field each action changes, which its `contact.updated` facts name.
 */
export async function updateInBulk(
  workspaceId: WorkspaceId,
  action: Exclude<BulkAction, "delete">,
  value: BulkValue,
  ids: string[],
  actor: { actorType: string; actorId: string | null },
  transaction: Transaction,
): Promise<{ field: string; changed: Changed[] }> {
  const bind = Binds.inWorkspace([ids]);
  let set: string;
  let changedOnly: string;
  let field: string;
  if (action === "tag") {
    field = "tags";
    bind.values.push(value.tag);
    set = "tags = c.tags || ARRAY[$3]::text[]";
    changedOnly = "NOT (c.tags @> ARRAY[$3]::text[])";
  } else if (action === "untag") {
    field = "tags";
    bind.values.push(value.tag);
    set = "tags = array_remove(c.tags, $3)";
    changedOnly = "c.tags @> ARRAY[$3]::text[]";
  } else if (action === "setStage") {
    field = "stage";
    bind.values.push(value.stage);
    set = "stage = $3";
    changedOnly = "c.stage IS DISTINCT FROM $3";
  } else {
    field = `attributes.${value.key}`;
    bind.values.push(
      value.key,
      value.value === null || value.value === undefined ? null : JSON.stringify(value.value),
    );
    set =
      "attributes = CASE WHEN $4::jsonb IS NULL THEN c.attributes - $3::text ELSE jsonb_set(c.attributes, ARRAY[$3::text], $4::jsonb) END";
    changedOnly = "(c.attributes -> $3::text) IS DISTINCT FROM $4::jsonb";
  }
  const stageHistory =
    action === "setStage"
      ? `, history AS (
           INSERT INTO contact_stage_history (id, workspace_id, contact_id, from_stage, to_stage, reason, changed_by_type, changed_by_id)
           SELECT gen_random_uuid()::text, $1, u.id, u.from_stage, u.stage, 'bulk', ${bind.p(actor.actorType)}, ${bind.p(actor.actorId)}
             FROM updated u)`
      : "";
  const changed = await query<Changed>(
    workspaceId,
    `WITH before AS (
       SELECT c.id, c.stage AS from_stage FROM contacts c
        WHERE c.workspace_id = $1 AND c.id = ANY($2::text[]) AND ${changedOnly} FOR UPDATE),
     updated AS (
       UPDATE contacts c SET ${set}, updated_at = now() FROM before b
        WHERE c.id = b.id RETURNING c.id, c.email, c.first_name, c.last_name, c.stage, b.from_stage)
     ${stageHistory}
     SELECT id, email, first_name, last_name FROM updated`,
    bind.values,
    transaction,
  );
  return { field, changed };
}
