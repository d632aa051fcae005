import { QueryTypes, type Transaction } from "sequelize";
import { database } from "../../lib/database";

/**
 * Score decay: points an event rule with `decay: {days}` gave expire `days`
 * after their event. An entry due (`decays_at <= now()`) gets a negative twin
 * ("decay: <rule>", `decay_of` = the entry; unique, so never twice) and is
 * marked `decayed_at`; the contact's score drops by the same amount.
 */

export interface DecayedScore {
  workspaceId: string;
  contactId: string;
  points: number;
}

/** Expire the due entries selected by `where` over `h` (rows another transaction holds are left to it). */
async function expireDue(where: string, bind: unknown[], transaction: Transaction): Promise<DecayedScore[]> {
  const sequelize = await database();
  return sequelize.query<DecayedScore>(
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
    { bind, type: QueryTypes.SELECT, transaction },
  );
}

/** Per contact, the sum of its decay entries. */
function totals(decayed: DecayedScore[]): DecayedScore[] {
  const byContact = new Map<string, DecayedScore>();
  for (const d of decayed) {
    const t = byContact.get(d.contactId);
    if (t) t.points += d.points;
    else byContact.set(d.contactId, { ...d });
  }
  return [...byContact.values()];
}

const BATCH = 500;
const MAX_BATCHES = 40;

/**
 * One pass of the decay queue over every workspace (a system queue, like due
 * tasks): claims contacts with due entries in id order, skipping those another
 * replica or a score writer holds, so no entry is ever expired twice. Answers
 * each touched contact's score change.
 */
export async function decayDue(batch = BATCH, maxBatches = MAX_BATCHES): Promise<DecayedScore[]> {
  const sequelize = await database();
  const out: DecayedScore[] = [];
  for (let n = 0; n < maxBatches; n += 1) {
    const done = await sequelize.transaction(async (transaction) => {
      const contacts = await sequelize.query<{ id: string }>(
        `SELECT c.id FROM contacts c
          WHERE c.id IN (SELECT h.contact_id FROM score_history h
                          WHERE h.decays_at <= now() AND h.decayed_at IS NULL
                          ORDER BY h.decays_at LIMIT $1)
          ORDER BY c.id FOR UPDATE SKIP LOCKED`,
        { bind: [batch], type: QueryTypes.SELECT, transaction },
      );
      if (contacts.length === 0) return 0;
      const decayed = totals(
        await expireDue(`h.contact_id = ANY($1::text[])`, [contacts.map((c) => c.id)], transaction),
      ).filter((d) => d.points !== 0);
      if (decayed.length) {
        await sequelize.query(
          `UPDATE contacts c SET score = c.score + d.delta
             FROM unnest($1::text[], $2::text[], $3::int[]) AS d(workspace_id, id, delta)
            WHERE c.workspace_id = d.workspace_id AND c.id = d.id`,
          {
            bind: [
              decayed.map((d) => d.workspaceId),
              decayed.map((d) => d.contactId),
              decayed.map((d) => d.points),
            ],
            transaction,
          },
        );
      }
      out.push(...decayed);
      return contacts.length;
    });
    if (done === 0) break;
  }
  return out;
}

/** Recalculation: expire every due entry of the workspace at once (the caller sets scores from the history). */
export async function decayWorkspace(workspaceId: string, transaction: Transaction): Promise<number> {
  return (await expireDue(`h.workspace_id = $1`, [workspaceId], transaction)).length;
}
