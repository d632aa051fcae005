import type { Transaction } from "sequelize";
import { database } from "../../lib/database";
import { addDecayToScores, claimDueContacts, expireDue, type DecayedScore } from "./decay.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Score decay: points an event rule with `decay: {days}` gave expire `days`
 * after their event. An entry due (`decays_at <= now()`) gets a negative twin
 * ("decay: <rule>", `decay_of` = the entry; unique, so never twice) and is
 * marked `decayed_at`; the contact's score drops by the same amount.
 */

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
      const contacts = await claimDueContacts(batch, transaction);
      if (contacts.length === 0) return 0;
      const decayed = totals(
        await expireDue(`h.contact_id = ANY($1::text[])`, [contacts.map((c) => c.id)], transaction),
      ).filter((d) => d.points !== 0);
      if (decayed.length) await addDecayToScores(decayed, transaction);
      out.push(...decayed);
      return contacts.length;
    });
    if (done === 0) break;
  }
  return out;
}

/** Recalculation: expire every due entry of the workspace at once (the caller sets scores from the history). */
export async function decayWorkspace(workspaceId: WorkspaceId, transaction: Transaction): Promise<number> {
  return (await expireDue(`h.workspace_id = $1`, [workspaceId], transaction)).length;
}
