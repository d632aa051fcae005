import { type Transaction } from "sequelize";
import { queryAcrossWorkspaces } from "../../lib/database";
import type { QueueFigures } from "../../lib/business-metrics";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import type { WorkspaceId } from "../../lib/tenancy";

export interface DecayedScore {
  workspaceId: WorkspaceId;
  contactId: string;
  points: number;
}

/** The statements of score decay (decay.ts). */

/** Score decay across workspaces as a queue (lib/queue-stats.ts): history entries still to decay. */
export async function decayQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("decays_at <= now()", "decays_at")} FROM score_history
      WHERE decays_at IS NOT NULL AND decayed_at IS NULL`,
    [],
  );
  return queueFigures("score_decay", row);
}

/** Expire the due entries selected by `where` over `h` (rows another transaction holds are left to it). */
export async function expireDue(
  where: string,
  bind: unknown[],
  transaction: Transaction,
): Promise<DecayedScore[]> {
  return queryAcrossWorkspaces<DecayedScore>(
    `WITH due AS (
       SELECT h.id FROM score_history h
        WHERE ${where} AND h.decays_at <= now() AND h.decayed_at IS NULL
        FOR UPDATE SKIP LOCKED
     ), marked AS (
       UPDATE score_history h SET decayed_at = now() FROM due WHERE h.id = due.id
       RETURNING h.id, h.workspace_id, h.contact_id, h.points, h.rule_id, h.reason, h.decays_at
     )
     INSERT INTO score_history (id, workspace_id, contact_id, points, rule_id, event_at, reason, decay_of, created_at)
     SELECT gen_random_uuid()::text, m.workspace_id, m.contact_id, -m.points, m.rule_id, m.decays_at,
            'decay: ' || COALESCE(m.reason, 'rule'), m.id, now()
       FROM marked m
     ON CONFLICT (decay_of) DO NOTHING
     RETURNING workspace_id AS "workspaceId", contact_id AS "contactId", points`,
    bind,
    transaction,
  );
}

/** Contacts with due entries, oldest due first, locked in id order; those another transaction holds are skipped. */
export async function claimDueContacts(
  batch: number,
  transaction: Transaction,
): Promise<Array<{ id: string }>> {
  return queryAcrossWorkspaces<{ id: string }>(
    `SELECT c.id FROM contacts c
          WHERE c.id IN (SELECT h.contact_id FROM score_history h
                          WHERE h.decays_at <= now() AND h.decayed_at IS NULL
                          ORDER BY h.decays_at LIMIT $1)
          ORDER BY c.id FOR UPDATE SKIP LOCKED`,
    [batch],
    transaction,
  );
}

/** Move each contact's score by its decayed points (across workspaces). */
export async function addDecayToScores(decayed: DecayedScore[], transaction: Transaction): Promise<void> {
  await queryAcrossWorkspaces(
    `UPDATE contacts c SET score = c.score + d.delta
             FROM unnest($1::text[], $2::text[], $3::int[]) AS d(workspace_id, id, delta)
            WHERE c.workspace_id = d.workspace_id AND c.id = d.id`,
    [decayed.map((d) => d.workspaceId), decayed.map((d) => d.contactId), decayed.map((d) => d.points)],
    transaction,
  );
}
