import type { Transaction } from "sequelize";
import { MicroBatcher } from "../../lib/batcher";
import { database } from "../../lib/database";
import { VersionedCache, type Versions } from "../../lib/versioned-cache";
import {
  addToScores,
  applyConditionRules,
  holdWorkspace,
  rebuildConditionRule,
  lockContacts,
  pendingContacts,
  tryHoldAndLockContacts,
} from "./conditions.repo";
import { decayWorkspace } from "./decay";
import { scoringRounds, type RuleDefinition } from "./rules";
import * as repo from "./scoring.repo";
import type { ScoreEvent } from "./scoring.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The scoring engine: which rules apply, events scored in batches under row
 * locks with exact caps, condition rules following contacts, manual
 * adjustments and the full rebuild. Its SQL is in scoring.repo.ts,
 * conditions.repo.ts and decay.repo.ts.
 */

/**
 * The workspace's active rules for the hot paths (every event, every contact
 * write), kept in process while a shared version probe says they are
 * unchanged (lib/versioned-cache.ts): a rule written on any node is seen by
 * the next read.
 */
const ruleCache = new VersionedCache<RuleDefinition[]>(
  repo.rulesVersionProbe,
  (workspaceId) => repo.activeRuleDefinitions(workspaceId),
  { area: "scoringRules" },
);

export const activeRules = (workspaceId: WorkspaceId, known?: Versions): Promise<RuleDefinition[]> =>
  ruleCache.get(workspaceId, known);

/**
 * Bring contacts (or, with `null`, the whole workspace: a rule was saved) in
 * line with the workspace's condition rules. Answers the contacts whose score
 * changed (their score segments follow).
 */
export async function syncConditionRules(
  workspaceId: WorkspaceId,
  rules: RuleDefinition[],
  contactIds: string[] | null,
): Promise<string[]> {
  const pending = await pendingContacts(workspaceId, rules, contactIds);
  if (pending.length === 0) return [];
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await holdWorkspace(workspaceId, transaction);
    const locked = await lockContacts(workspaceId, pending, transaction);
    const changes = await applyConditionRules(workspaceId, locked, rules, transaction);
    return addToScores(workspaceId, changes, transaction);
  });
}

/**
 * A condition rule was saved: every contact of the workspace that matches it
 * now and does not hold its points gets them (one set-shaped statement), and
 * holders that no longer match give them back. Answers the contacts whose
 * score changed. An event rule, or an inactive one, changes nothing.
 */
export async function syncRule(workspaceId: WorkspaceId, id: string): Promise<string[]> {
  const rule = await repo.activeConditionRule(workspaceId, id);
  return rule ? syncConditionRules(workspaceId, [rule], null) : [];
}

/**
 * After contacts changed (the contacts service's writes reach here through
 * segments): their condition rules follow. Without an active condition rule
 * this answers at once, from the cache. Answers the contacts whose score changed.
 */
export async function applyContactRules(workspaceId: WorkspaceId, contactIds: string[]): Promise<string[]> {
  const rules = (await activeRules(workspaceId)).filter((r) => r.condition);
  if (rules.length === 0) return [];
  return syncConditionRules(workspaceId, rules, contactIds);
}

export interface ApplyResult {
  scoreBefore: number;
  score: number;
  applied: Array<{ ruleId: string; points: number }>;
}

/**
 * Score one event: every active rule of its type whose `where` matches adds
 * its points, within the rule's caps, and condition rules that read events of
 * its type follow the contact. Idempotent per event id: a retried event hits
 * the unique (rule_id, event_id) and adds nothing. When no active rule cares
 * about the type (the common case) it answers null at once: no transaction,
 * no lock, nothing written. Null too when the contact is not in the workspace.
 */
export async function applyEvent(
  workspaceId: WorkspaceId,
  event: ScoreEvent,
  known?: Versions,
): Promise<ApplyResult | null> {
  const active = await activeRules(workspaceId, known);
  const rules = active.filter((r) => r.eventType === event.type);
  const conditionRules = active.filter((r) => r.condition && r.conditionEventTypes.includes(event.type));
  if (rules.length === 0 && conditionRules.length === 0) return null;
  const job = { workspaceId, event, rules, conditionRules };
  const result = await eventScorer.add(job);
  return result === HELD ? scoreHeld(job) : result;
}

interface ScoreJob {
  workspaceId: WorkspaceId;
  event: ScoreEvent;
  rules: RuleDefinition[];
  conditionRules: RuleDefinition[];
}

/** A batch's answer for an event whose contact (or workspace, during a recalculation) another transaction holds. */
const HELD = Symbol("held");

/** Events scored together share one transaction, so one commit (lib/batcher.ts). */
const eventScorer = new MicroBatcher(scoreEvents, { maxBatch: 100, lanes: 1 });

/**
 * Score a batch of events in one transaction, so caps and scores see the
 * events before them. A batch never waits for a lock: it tries its
 * workspaces' holds and takes its contacts in id order with SKIP LOCKED, and
 * answers HELD for the events it could not lock, which are then scored
 * outside the batcher, one transaction per contact waiting for its row (scoreHeld). So one busy
 * contact never stalls the events of others, and no deadlock forms.
 */
async function scoreEvents(jobs: ScoreJob[]): Promise<Array<ApplyResult | typeof HELD>> {
  const sequelize = await database();
  const results: Array<ApplyResult | typeof HELD> = jobs.map(() => HELD);
  await sequelize.transaction(async (transaction) => {
    const locked = await tryHoldAndLockContacts(
      jobs.map((j) => ({ workspaceId: j.workspaceId, contactId: j.event.contactId })),
      transaction,
    );
    const scores = new Map(locked.map((r) => [contactKey(r.workspace_id, r.id), r.score]));
    const lockedJobs = [...jobs.keys()].filter((i) =>
      scores.has(contactKey(jobs[i].workspaceId, jobs[i].event.contactId)),
    );
    const scored = await scoreLocked(
      lockedJobs.map((i) => jobs[i]),
      scores,
      transaction,
    );
    lockedJobs.forEach((i, k) => (results[i] = scored[k]));
  });
  return results;
}

/**
 * Events of one contact, in a transaction of their own that waits for the
 * contact's lock, scored in order. A batch answers HELD for every event of a
 * contact it could not lock, all at once: those go together here, so a hot
 * contact's burst waits once, not once per event (one transaction each kept
 * its lock busy and left every next batch finding it held).
 */
async function scoreContactAlone(jobs: ScoreJob[]): Promise<Array<ApplyResult | null>> {
  const { workspaceId, event } = jobs[0];
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await holdWorkspace(workspaceId, transaction);
    const before = await repo.lockContactScore(workspaceId, event.contactId, transaction);
    if (before === null) return jobs.map(() => null);
    const scores = new Map([[contactKey(workspaceId, event.contactId), before]]);
    return scoreLocked(jobs, scores, transaction);
  });
}

/** The held events of each contact gathering in this turn of the event loop, by contact. */
const heldByContact = new Map<
  string,
  Array<{ job: ScoreJob; resolve: (r: ApplyResult | null) => void; reject: (err: unknown) => void }>
>();

/** An event whose contact a batch found held: scored with the other held events of its contact from that turn. */
function scoreHeld(job: ScoreJob): Promise<ApplyResult | null> {
  const key = contactKey(job.workspaceId, job.event.contactId);
  return new Promise((resolve, reject) => {
    const waiting = heldByContact.get(key);
    if (waiting) return void waiting.push({ job, resolve, reject });
    const group = [{ job, resolve, reject }];
    heldByContact.set(key, group);
    setImmediate(() => {
      heldByContact.delete(key);
      scoreContactAlone(group.map((g) => g.job)).then(
        (results) => group.forEach((g, i) => g.resolve(results[i])),
        async (err) => {
          if (group.length === 1) return group[0].reject(err);
          // One bad event fails only its own caller: each is tried alone.
          for (const g of group) await scoreContactAlone([g.job]).then(([r]) => g.resolve(r), g.reject);
        },
      );
    });
  });
}

const contactKey = (workspaceId: WorkspaceId, contactId: string) => `${workspaceId}/${contactId}`;

/**
 * The rules' entries for jobs whose contacts are locked, scores known in
 * `scores` (updated as the jobs run); the scores are written at the end. A
 * round and rule set costs one statement for event rules and one per
 * condition rule, however many events it holds.
 */
async function scoreLocked(
  jobs: ScoreJob[],
  scores: Map<string, number>,
  transaction: Transaction,
): Promise<ApplyResult[]> {
  const groupOf = (job: ScoreJob) =>
    [
      job.workspaceId,
      job.event.type,
      ...job.rules.map((r) => r.id),
      "|",
      ...job.conditionRules.map((r) => r.id),
    ].join(" ");
  const results: ApplyResult[] = [];
  const rounds = scoringRounds(
    jobs.map((j) => ({ workspaceId: j.workspaceId, contactId: j.event.contactId, group: groupOf(j) })),
  );
  for (const groups of rounds) {
    for (const indices of groups) {
      const group = indices.map((i) => jobs[i]);
      const { workspaceId, rules, conditionRules } = group[0];
      const awards = rules.length
        ? await repo.awardEventRules(
            workspaceId,
            group.map((j) => j.event),
            rules,
            transaction,
          )
        : [];
      const held = await applyConditionRules(
        workspaceId,
        group.map((j) => j.event.contactId),
        conditionRules,
        transaction,
      );
      for (const i of indices) {
        const { event } = jobs[i];
        const key = contactKey(workspaceId, event.contactId);
        const before = scores.get(key)!;
        const applied = [
          ...awards.filter((a) => a.eventId === event.eventId),
          ...held.filter((c) => c.contactId === event.contactId),
        ].map((a) => ({ ruleId: a.ruleId, points: a.points }));
        const score = before + applied.reduce((sum, a) => sum + a.points, 0);
        scores.set(key, score);
        results[i] = { scoreBefore: before, score, applied };
      }
    }
  }
  const changes = new Map<WorkspaceId, Array<{ contactId: string; points: number }>>();
  jobs.forEach((job, i) => {
    const list = changes.get(job.workspaceId) ?? [];
    list.push({ contactId: job.event.contactId, points: results[i].score - results[i].scoreBefore });
    changes.set(job.workspaceId, list);
  });
  for (const [ws, list] of changes) await addToScores(ws, list, transaction);
  return results;
}

/** A manual adjustment with a reason; null when there is no such contact. */
export async function adjustScore(
  workspaceId: WorkspaceId,
  contactId: string,
  points: number,
  reason: string | null,
): Promise<{ scoreBefore: number; score: number } | null> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await holdWorkspace(workspaceId, transaction);
    const before = await repo.lockContactScore(workspaceId, contactId, transaction);
    if (before === null) return null;
    await repo.insertAdjustment(workspaceId, contactId, points, reason, transaction);
    await addToScores(workspaceId, [{ contactId, points }], transaction);
    return { scoreBefore: before, score: before + points };
  });
}

/**
 * Rebuild every rule-given score entry of the workspace: event rules from
 * its events, in event order with the same caps; condition rules from the
 * contacts matching them now; then every entry past its decay expires, and
 * each contact's score becomes the sum of its history (manual adjustments
 * kept). The same result live scoring and decay reach. Answers how many
 * scores changed. Holds the workspace's scoring lock exclusively meanwhile.
 */
export async function recalculate(
  workspaceId: WorkspaceId,
  progress: (done: number, total: number) => Promise<void>,
): Promise<{ rules: number; entries: number; decayed: number; contactsChanged: number }> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await holdWorkspace(workspaceId, transaction, true);
    const rules = await repo.activeRuleDefinitions(workspaceId, transaction);
    await repo.clearRuleEntries(workspaceId, transaction);
    let entries = 0;
    for (const [k, rule] of rules.entries()) {
      entries += rule.condition
        ? await rebuildConditionRule(workspaceId, rule, transaction)
        : await repo.rebuildEventRule(workspaceId, rule, transaction);
      await progress(k + 1, rules.length + 1);
    }
    const decayed = await decayWorkspace(workspaceId, transaction);
    const contactsChanged = await repo.sumScores(workspaceId, transaction);
    return { rules: rules.length, entries, decayed, contactsChanged };
  });
}
