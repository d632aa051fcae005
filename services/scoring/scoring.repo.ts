import { QueryTypes, type Transaction } from "sequelize";
import { MicroBatcher } from "../../lib/batcher";
import { newId } from "../../lib/crypto";
import { Binds, database, queryPrepared } from "../../lib/database";
import { notFound, validationError } from "../../lib/errors";
import { pageOf, type Page, type PageRequest } from "../../lib/pagination";
import { sqlProbe, VersionedCache, type Versions } from "../../lib/versioned-cache";
import type { FieldCondition, FilterGroup } from "../segments/filter-schema";
import {
  addToScores,
  applyConditionRules,
  holdWorkspace,
  tryHoldAndLockContacts,
  rebuildConditionRule,
  syncConditionRules,
} from "./conditions";
import { decayWorkspace } from "./decay";
import {
  compileWhere,
  decaysAtSql,
  periodStartSql,
  ruleShapeIssues,
  scoringRounds,
  validateCondition,
  validateWhere,
  type RuleDefinition,
} from "./rules";

/**
 * Every query of the scoring area except condition holdings (conditions.ts)
 * and decay (decay.ts). Workspace id first. Scoring owns `contacts.score` and
 * writes it in these modules only.
 */

export interface RuleView {
  id: string;
  name: string;
  eventType: string | null;
  where: FieldCondition[] | null;
  condition: FilterGroup | null;
  points: number;
  maxPerContact: number | null;
  periodCap: { max: number; days: number } | null;
  decay: { days: number } | null;
  active: boolean;
  createdAt: Date;
  updatedAt: Date;
}

interface RuleRow {
  id: string;
  name: string;
  event_type: string | null;
  where: FieldCondition[] | null;
  condition: FilterGroup | null;
  condition_event_types: string[];
  points: number;
  max_per_contact: number | null;
  period_days: number | null;
  max_per_period: number | null;
  decay_days: number | null;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const view = (r: RuleRow): RuleView => ({
  id: r.id,
  name: r.name,
  eventType: r.event_type,
  where: r.where,
  condition: r.condition,
  points: r.points,
  maxPerContact: r.max_per_contact,
  periodCap: r.period_days && r.max_per_period ? { max: r.max_per_period, days: r.period_days } : null,
  decay: r.decay_days ? { days: r.decay_days } : null,
  active: r.active,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const definition = (r: RuleRow): RuleDefinition => ({
  id: r.id,
  name: r.name,
  eventType: r.event_type,
  where: r.where,
  condition: r.condition,
  conditionEventTypes: r.condition_event_types,
  points: r.points,
  maxPerContact: r.max_per_contact,
  periodDays: r.period_days,
  maxPerPeriod: r.max_per_period,
  decayDays: r.decay_days,
});

/**
 * The workspace's active rules for the hot paths (every event, every contact
 * write), kept in process while a shared version probe says they are
 * unchanged (lib/versioned-cache.ts): a rule written on any node is seen by
 * the next read.
 */
const ruleCache = new VersionedCache<RuleDefinition[]>(
  sqlProbe(
    "scoringRules",
    `SELECT workspace_id, count(*) || '/' || max(updated_at)::text || '/' || max(created_at)::text AS version
       FROM scoring_rules WHERE workspace_id = ANY($1::text[]) GROUP BY workspace_id`,
  ),
  async (workspaceId) => {
    const sequelize = await database();
    const rows = await sequelize.query<RuleRow>(
      `SELECT * FROM scoring_rules WHERE workspace_id = $1 AND active ORDER BY created_at, id`,
      { bind: [workspaceId], type: QueryTypes.SELECT },
    );
    return rows.map(definition);
  },
  { area: "scoringRules" },
);

export const activeRules = (workspaceId: string, known?: Versions): Promise<RuleDefinition[]> =>
  ruleCache.get(workspaceId, known);

function refuse(subject: string, issues: Array<{ field: string; message: string }>) {
  if (issues.length)
    throw validationError(`Invalid ${subject}: ${issues[0].field} ${issues[0].message}`, issues);
}

export function checkWhere(where: unknown) {
  if (where === undefined || where === null) return;
  refuse("where", validateWhere(where));
}

/** Validate a rule's condition; answers the event types it reads. */
function checkCondition(condition: unknown): string[] {
  if (condition === undefined || condition === null) return [];
  const { issues, eventTypes } = validateCondition(condition);
  refuse("condition", issues);
  return eventTypes;
}

export async function listRules(workspaceId: string, page: PageRequest): Promise<Page<RuleView>> {
  const sequelize = await database();
  const rows = await sequelize.query<RuleRow>(
    `SELECT * FROM scoring_rules WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
    { bind: [workspaceId, page.limit, page.offset], type: QueryTypes.SELECT },
  );
  const [{ n }] = await sequelize.query<{ n: string }>(
    `SELECT count(*) AS n FROM scoring_rules WHERE workspace_id = $1`,
    {
      bind: [workspaceId],
      type: QueryTypes.SELECT,
    },
  );
  return pageOf(rows.map(view), Number(n), page);
}

export async function getRule(workspaceId: string, id: string): Promise<RuleView> {
  const sequelize = await database();
  const [row] = await sequelize.query<RuleRow>(
    `SELECT * FROM scoring_rules WHERE workspace_id = $1 AND id = $2`,
    {
      bind: [workspaceId, id],
      type: QueryTypes.SELECT,
    },
  );
  if (!row) throw notFound("Scoring rule");
  return view(row);
}

export interface RuleInput {
  name?: string;
  eventType?: string;
  where?: FieldCondition[] | null;
  condition?: FilterGroup;
  points?: number;
  maxPerContact?: number | null;
  periodCap?: { max: number; days: number } | null;
  decay?: { days: number } | null;
  active?: boolean;
}

const givenFields = (input: RuleInput) =>
  new Set(Object.keys(input).filter((k) => input[k as keyof RuleInput] !== undefined));

export async function createRule(
  workspaceId: string,
  input: Required<Pick<RuleInput, "name" | "points">> & RuleInput,
) {
  refuse(
    "rule",
    ruleShapeIssues(
      {
        eventType: input.eventType ?? null,
        condition: input.condition,
        where: input.where,
        maxPerContact: input.maxPerContact ?? null,
        periodCap: input.periodCap,
        decay: input.decay,
      },
      givenFields(input),
    ),
  );
  checkWhere(input.where);
  const eventTypes = checkCondition(input.condition);
  const sequelize = await database();
  const id = newId();
  await sequelize.query(
    `INSERT INTO scoring_rules (id, workspace_id, name, event_type, "where", condition, condition_event_types, points,
                                max_per_contact, period_days, max_per_period, decay_days, active)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::text[], $8, $9, $10, $11, $12, $13)`,
    {
      bind: [
        id,
        workspaceId,
        input.name,
        input.eventType ?? null,
        input.where?.length ? JSON.stringify(input.where) : null,
        input.condition ? JSON.stringify(input.condition) : null,
        eventTypes,
        input.points,
        input.maxPerContact ?? null,
        input.periodCap?.days ?? null,
        input.periodCap?.max ?? null,
        input.decay?.days ?? null,
        input.active ?? true,
      ],
    },
  );
  return getRule(workspaceId, id);
}

export async function updateRule(workspaceId: string, id: string, input: RuleInput) {
  const stored = await getRule(workspaceId, id);
  const pick = <K extends keyof RuleInput>(key: K, current: unknown) =>
    input[key] !== undefined ? input[key] : current;
  refuse(
    "rule",
    ruleShapeIssues(
      {
        eventType: (pick("eventType", stored.eventType) as string | null) ?? null,
        condition: pick("condition", stored.condition),
        where: pick("where", stored.where),
        maxPerContact: (pick("maxPerContact", stored.maxPerContact) as number | null) ?? null,
        periodCap: pick("periodCap", stored.periodCap),
        decay: pick("decay", stored.decay),
      },
      givenFields(input),
    ),
  );
  checkWhere(input.where);
  const eventTypes = checkCondition(input.condition);
  const sets = ["updated_at = now()"];
  const bind: unknown[] = [workspaceId, id];
  const set = (column: string, value: unknown, cast = "") =>
    sets.push(`${column} = $${bind.push(value)}${cast}`);
  if (input.name !== undefined) set("name", input.name);
  if (input.eventType !== undefined) set("event_type", input.eventType);
  if (input.where !== undefined)
    set(`"where"`, input.where?.length ? JSON.stringify(input.where) : null, "::jsonb");
  if (input.condition !== undefined) {
    set("condition", JSON.stringify(input.condition), "::jsonb");
    set("condition_event_types", eventTypes, "::text[]");
  }
  if (input.points !== undefined) set("points", input.points);
  if (input.maxPerContact !== undefined) set("max_per_contact", input.maxPerContact);
  if (input.periodCap !== undefined) {
    set("period_days", input.periodCap?.days ?? null);
    set("max_per_period", input.periodCap?.max ?? null);
  }
  if (input.decay !== undefined) set("decay_days", input.decay?.days ?? null);
  if (input.active !== undefined) set("active", input.active);
  const sequelize = await database();
  await sequelize.query(`UPDATE scoring_rules SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2`, {
    bind,
  });
  return getRule(workspaceId, id);
}

/** Delete a rule; the points it gave stay in the history (their rule id is cleared). */
export async function deleteRule(workspaceId: string, id: string) {
  await getRule(workspaceId, id);
  const sequelize = await database();
  await sequelize.query(`DELETE FROM scoring_rules WHERE workspace_id = $1 AND id = $2`, {
    bind: [workspaceId, id],
  });
}

/**
 * A condition rule was saved: every contact of the workspace that matches it
 * now and does not hold its points gets them (one set-shaped statement), and
 * holders that no longer match give them back. Answers the contacts whose
 * score changed. An event rule, or an inactive one, changes nothing.
 */
export async function syncRule(workspaceId: string, id: string): Promise<string[]> {
  const sequelize = await database();
  const [row] = await sequelize.query<RuleRow>(
    `SELECT * FROM scoring_rules WHERE workspace_id = $1 AND id = $2 AND active AND condition IS NOT NULL`,
    { bind: [workspaceId, id], type: QueryTypes.SELECT },
  );
  return row ? syncConditionRules(workspaceId, [definition(row)], null) : [];
}

/**
 * After contacts changed (the contacts service's writes reach here through
 * segments): their condition rules follow. Without an active condition rule
 * this answers at once, from the cache. Answers the contacts whose score changed.
 */
export async function applyContactRules(workspaceId: string, contactIds: string[]): Promise<string[]> {
  const rules = (await activeRules(workspaceId)).filter((r) => r.condition);
  if (rules.length === 0) return [];
  return syncConditionRules(workspaceId, rules, contactIds);
}

export interface ScoreEvent {
  eventId: string;
  contactId: string;
  type: string;
  metadata?: Record<string, unknown>;
  timestamp?: Date | string;
}

export interface ApplyResult {
  scoreBefore: number;
  score: number;
  applied: Array<{ ruleId: string; points: number }>;
}

/** Lock the contact row: caps and the score sum are exact under concurrent events for one contact. */
async function lockContact(
  workspaceId: string,
  contactId: string,
  transaction: Transaction,
): Promise<number | null> {
  const sequelize = await database();
  const [row] = await sequelize.query<{ score: number }>(
    `SELECT score FROM contacts WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    { bind: [workspaceId, contactId], type: QueryTypes.SELECT, transaction },
  );
  return row ? row.score : null;
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
  workspaceId: string,
  event: ScoreEvent,
  known?: Versions,
): Promise<ApplyResult | null> {
  const active = await activeRules(workspaceId, known);
  const rules = active.filter((r) => r.eventType === event.type);
  const conditionRules = active.filter((r) => r.condition && r.conditionEventTypes.includes(event.type));
  if (rules.length === 0 && conditionRules.length === 0) return null;
  const job = { workspaceId, event, rules, conditionRules };
  const result = await eventScorer.add(job);
  return result === HELD ? scoreAlone(job) : result;
}

interface ScoreJob {
  workspaceId: string;
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
 * answers HELD for the events it could not lock, which are then scored alone,
 * outside the batcher, waiting for their one row as usual. So one busy
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

/** One event in a transaction of its own, waiting for its contact's lock. */
async function scoreAlone(job: ScoreJob): Promise<ApplyResult | null> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await holdWorkspace(job.workspaceId, transaction);
    const before = await lockContact(job.workspaceId, job.event.contactId, transaction);
    if (before === null) return null;
    const scores = new Map([[contactKey(job.workspaceId, job.event.contactId), before]]);
    const [result] = await scoreLocked([job], scores, transaction);
    return result;
  });
}

const contactKey = (workspaceId: string, contactId: string) => `${workspaceId}/${contactId}`;

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
        ? await awardEventRules(
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
  const changes = new Map<string, Array<{ contactId: string; points: number }>>();
  jobs.forEach((job, i) => {
    const list = changes.get(job.workspaceId) ?? [];
    list.push({ contactId: job.event.contactId, points: results[i].score - results[i].scoreBefore });
    changes.set(job.workspaceId, list);
  });
  for (const [ws, list] of changes) await addToScores(ws, list, transaction);
  return results;
}

/**
 * Event rules for events of one type in one workspace, at most one per
 * contact: each rule whose `where` matches adds its points within its caps.
 * One statement matches and writes for every event and rule. The stored
 * event is read when there is one (its own columns), else the event as given.
 */
async function awardEventRules(
  workspaceId: string,
  events: ScoreEvent[],
  rules: RuleDefinition[],
  transaction: Transaction,
): Promise<Array<{ eventId: string; ruleId: string; points: number }>> {
  const binds = new Binds([
    workspaceId,
    events.map((e) => e.eventId),
    events.map((e) => e.contactId),
    events.map((e) => e.type),
    events.map((e) => JSON.stringify(e.metadata ?? {})),
    events.map((e) => toIso(e.timestamp)),
    rules.map((r) => r.id),
    rules.map((r) => r.points),
    rules.map((r) => r.name),
    rules.map((r) => r.maxPerContact),
    rules.map((r) => r.periodDays),
    rules.map((r) => r.maxPerPeriod),
    rules.map((r) => r.decayDays),
  ]);
  const predicates = rules.map((r) => compileWhere(r.where, binds));
  const period = (ts: string) => periodStartSql(ts, "r.period_days");
  // Caps count the rule's awards (decayed ones included), never the decay entries themselves.
  return queryPrepared<{ eventId: string; ruleId: string; points: number }>(
    `WITH given AS (
       SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
              AS g(event_id, contact_id, type, metadata, ts)
     ), e AS (
       -- The lookup is by id alone (a fence keeps the workspace check out of it), so it is always the
       -- primary key, whatever the statistics said when the statement's plan was made.
       SELECT g.event_id, g.contact_id, COALESCE(s.type, g.type) AS type,
              COALESCE(s.metadata, g.metadata::jsonb) AS metadata,
              COALESCE(s.timestamp, g.ts::timestamptz, now()) AS timestamp,
              s.session_id, s.page_url, s.referrer, s.utm_source, s.utm_medium, s.utm_campaign
         FROM given g
         LEFT JOIN LATERAL (SELECT * FROM events x WHERE x.id = g.event_id OFFSET 0) s ON s.workspace_id = $1
     ), matched AS (
       SELECT e.event_id, e.contact_id, e.timestamp, ARRAY[${predicates.join(", ")}]::boolean[] AS m FROM e
     ), r AS (
       SELECT * FROM unnest($7::text[], $8::int[], $9::text[], $10::int[], $11::int[], $12::int[], $13::int[])
              WITH ORDINALITY AS r(id, points, name, max_per_contact, period_days, max_per_period, decay_days, k)
     )
     INSERT INTO score_history (id, workspace_id, contact_id, points, rule_id, event_id, event_at, reason, decays_at, created_at)
     SELECT gen_random_uuid()::text, $1, x.contact_id, r.points, r.id, x.event_id, x.timestamp, r.name,
            ${decaysAtSql("x.timestamp", "r.decay_days")}, now()
       FROM matched x JOIN r ON x.m[r.k::int]
      WHERE (r.max_per_contact IS NULL OR (SELECT count(*) FROM score_history h
                                            WHERE h.rule_id = r.id AND h.contact_id = x.contact_id AND h.decay_of IS NULL) < r.max_per_contact)
        AND (r.period_days IS NULL OR r.max_per_period IS NULL OR (
             SELECT count(*) FROM score_history h WHERE h.rule_id = r.id AND h.contact_id = x.contact_id AND h.decay_of IS NULL
                AND h.event_at >= ${period("x.timestamp")}
                AND h.event_at < ${period("x.timestamp")} + make_interval(days => r.period_days)) < r.max_per_period)
     ON CONFLICT (rule_id, event_id) DO NOTHING
     RETURNING event_id AS "eventId", rule_id AS "ruleId", points`,
    binds.values,
    transaction,
  );
}

const toIso = (t: Date | string | undefined) => (t === undefined ? null : new Date(t).toISOString());

/** A manual adjustment with a reason. */
export async function adjustScore(
  workspaceId: string,
  contactId: string,
  points: number,
  reason: string | null,
) {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await holdWorkspace(workspaceId, transaction);
    const before = await lockContact(workspaceId, contactId, transaction);
    if (before === null) throw notFound("Contact");
    await sequelize.query(
      `INSERT INTO score_history (id, workspace_id, contact_id, points, reason, created_at) VALUES ($1, $2, $3, $4, $5, now())`,
      { bind: [newId(), workspaceId, contactId, points, reason], transaction },
    );
    await addToScores(workspaceId, [{ contactId, points }], transaction);
    return { scoreBefore: before, score: before + points };
  });
}

export interface HistoryEntry {
  points: number;
  ruleId: string | null;
  eventId: string | null;
  reason: string | null;
  createdAt: Date;
}

export async function scoreOf(
  workspaceId: string,
  contactId: string,
  limit: number,
): Promise<{ score: number; history: HistoryEntry[] }> {
  const sequelize = await database();
  const [contact] = await sequelize.query<{ score: number }>(
    `SELECT score FROM contacts WHERE workspace_id = $1 AND id = $2`,
    {
      bind: [workspaceId, contactId],
      type: QueryTypes.SELECT,
    },
  );
  if (!contact) throw notFound("Contact");
  const rows = await sequelize.query<{
    points: number;
    rule_id: string | null;
    event_id: string | null;
    reason: string | null;
    created_at: Date;
  }>(
    `SELECT points, rule_id, event_id, reason, created_at FROM score_history
      WHERE workspace_id = $1 AND contact_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3`,
    { bind: [workspaceId, contactId, limit], type: QueryTypes.SELECT },
  );
  return {
    score: contact.score,
    history: rows.map((r) => ({
      points: r.points,
      ruleId: r.rule_id,
      eventId: r.event_id,
      reason: r.reason,
      createdAt: r.created_at,
    })),
  };
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
  workspaceId: string,
  progress: (done: number, total: number) => Promise<void>,
): Promise<{ rules: number; entries: number; decayed: number; contactsChanged: number }> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await holdWorkspace(workspaceId, transaction, true);
    const rules = (
      await sequelize.query<RuleRow>(
        `SELECT * FROM scoring_rules WHERE workspace_id = $1 AND active ORDER BY created_at, id`,
        {
          bind: [workspaceId],
          type: QueryTypes.SELECT,
          transaction,
        },
      )
    ).map(definition);
    // Their decay entries and condition holdings go with them.
    await sequelize.query(`DELETE FROM score_history WHERE workspace_id = $1 AND rule_id IS NOT NULL`, {
      bind: [workspaceId],
      transaction,
    });
    await sequelize.query(`DELETE FROM scoring_rule_matches WHERE workspace_id = $1`, {
      bind: [workspaceId],
      transaction,
    });
    let entries = 0;
    for (const [k, rule] of rules.entries()) {
      if (rule.condition) {
        entries += await rebuildConditionRule(workspaceId, rule, transaction);
        await progress(k + 1, rules.length + 1);
        continue;
      }
      const binds = new Binds([
        workspaceId,
        rule.eventType,
        rule.id,
        rule.points,
        rule.maxPerContact,
        rule.periodDays,
        rule.maxPerPeriod,
        rule.name,
        rule.decayDays,
      ]);
      const where = compileWhere(rule.where, binds);
      const period = `CASE WHEN $6::int IS NULL THEN 0 ELSE floor(extract(epoch FROM e.timestamp) / ($6::int * 86400)) END`;
      const inserted = await sequelize.query(
        `INSERT INTO score_history (id, workspace_id, contact_id, points, rule_id, event_id, event_at, reason, decays_at, created_at)
         SELECT gen_random_uuid()::text, $1, y.contact_id, $4, $3, y.id, y.timestamp, $8,
                ${decaysAtSql("y.timestamp", "$9::int")}, now()
           FROM (
             SELECT x.*, row_number() OVER (PARTITION BY x.contact_id ORDER BY x.timestamp, x.id) AS nth
               FROM (
                 SELECT e.id, e.contact_id, e.timestamp,
                        row_number() OVER (PARTITION BY e.contact_id, ${period} ORDER BY e.timestamp, e.id) AS nth_in_period
                   FROM events e
                  WHERE e.workspace_id = $1 AND e.type = $2 AND e.contact_id IS NOT NULL AND ${where}
               ) x
              WHERE $6::int IS NULL OR $7::int IS NULL OR x.nth_in_period <= $7::int
           ) y
          WHERE $5::int IS NULL OR y.nth <= $5::int
         RETURNING 1`,
        { bind: binds.values, type: QueryTypes.SELECT, transaction },
      );
      entries += inserted.length;
      await progress(k + 1, rules.length + 1);
    }
    const decayed = await decayWorkspace(workspaceId, transaction);
    const changed = await sequelize.query(
      `UPDATE contacts c SET score = t.total
         FROM (SELECT c2.id, COALESCE((SELECT sum(h.points) FROM score_history h WHERE h.contact_id = c2.id), 0)::int AS total
                 FROM contacts c2 WHERE c2.workspace_id = $1) t
        WHERE c.id = t.id AND c.score IS DISTINCT FROM t.total
        RETURNING c.id`,
      { bind: [workspaceId], type: QueryTypes.SELECT, transaction },
    );
    return { rules: rules.length, entries, decayed, contactsChanged: changed.length };
  });
}
