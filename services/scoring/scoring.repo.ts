import { sqlProbe } from "../../lib/versioned-cache";
import { type Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { Binds, query, queryPrepared } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { FieldCondition, FilterGroup } from "../segments/filter-schema";
import { compileWhere, decaysAtSql, periodStartSql, type RuleDefinition, type RuleInput } from "./rules";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The queries on scoring rules and score history, and on `contacts.score`,
 * which scoring owns. Condition holdings are in conditions.ts, decay in
 * decay.ts; what batches, locks and rebuilds is the engine (engine.ts).
 * Workspace id first; a missing row is null.
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

export async function listRules(workspaceId: WorkspaceId, page: PageRequest): Promise<Page<RuleView>> {
  return selectPage(
    workspaceId,
    { select: "SELECT * FROM scoring_rules WHERE workspace_id = $1", orderBy: "created_at DESC, id DESC" },
    [],
    page,
    view,
  );
}

export async function findRule(workspaceId: WorkspaceId, id: string): Promise<RuleView | null> {
  const [row] = await query<RuleRow>(
    workspaceId,
    `SELECT * FROM scoring_rules WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
  return row ? view(row) : null;
}

/** The workspace's active rules, oldest first (the order they score in). */
export async function activeRuleDefinitions(
  workspaceId: WorkspaceId,
  transaction?: Transaction,
): Promise<RuleDefinition[]> {
  const rows = await query<RuleRow>(
    workspaceId,
    `SELECT * FROM scoring_rules WHERE workspace_id = $1 AND active ORDER BY created_at, id`,
    [],
    transaction,
  );
  return rows.map(definition);
}

/** The rule when it is an active condition rule, else null. */
export async function activeConditionRule(
  workspaceId: WorkspaceId,
  id: string,
): Promise<RuleDefinition | null> {
  const [row] = await query<RuleRow>(
    workspaceId,
    `SELECT * FROM scoring_rules WHERE workspace_id = $1 AND id = $2 AND active AND condition IS NOT NULL`,
    [id],
  );
  return row ? definition(row) : null;
}

/** Insert a checked rule; `eventTypes` are those its condition reads. Answers its id. */
export async function insertRule(
  workspaceId: WorkspaceId,
  input: Required<Pick<RuleInput, "name" | "points">> & RuleInput,
  eventTypes: string[],
): Promise<string> {
  const id = newId();
  await query(
    workspaceId,
    `INSERT INTO scoring_rules (id, workspace_id, name, event_type, "where", condition, condition_event_types, points,
                                max_per_contact, period_days, max_per_period, decay_days, active)
     VALUES ($2, $1, $3, $4, $5::jsonb, $6::jsonb, $7::text[], $8, $9, $10, $11, $12, $13)`,
    [
      id,
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
  );
  return id;
}

/** Write the fields a PATCH sent; `eventTypes` go with a new condition. False: no such rule. */
export async function updateRule(
  workspaceId: WorkspaceId,
  id: string,
  input: RuleInput,
  eventTypes: string[],
): Promise<boolean> {
  const binds = Binds.inWorkspace([id]);
  const sets = ["updated_at = now()"];
  const set = (column: string, value: unknown, cast?: string) =>
    sets.push(`${column} = ${binds.p(value, cast)}`);
  if (input.name !== undefined) set("name", input.name);
  if (input.eventType !== undefined) set("event_type", input.eventType);
  if (input.where !== undefined)
    set(`"where"`, input.where?.length ? JSON.stringify(input.where) : null, "jsonb");
  if (input.condition !== undefined) {
    set("condition", JSON.stringify(input.condition), "jsonb");
    set("condition_event_types", eventTypes, "text[]");
  }
  if (input.points !== undefined) set("points", input.points);
  if (input.maxPerContact !== undefined) set("max_per_contact", input.maxPerContact);
  if (input.periodCap !== undefined) {
    set("period_days", input.periodCap?.days ?? null);
    set("max_per_period", input.periodCap?.max ?? null);
  }
  if (input.decay !== undefined) set("decay_days", input.decay?.days ?? null);
  if (input.active !== undefined) set("active", input.active);
  const updated = await query<{ id: string }>(
    workspaceId,
    `UPDATE scoring_rules SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    binds.values,
  );
  return updated.length > 0;
}

/** Delete a rule; the points it gave stay in the history (their rule id is cleared). False: no such rule. */
export async function deleteRule(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const deleted = await query<{ id: string }>(
    workspaceId,
    `DELETE FROM scoring_rules WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return deleted.length > 0;
}

/** Lock the contact row: caps and the score sum are exact under concurrent events for one contact. Null: no such contact. */
export async function lockContactScore(
  workspaceId: WorkspaceId,
  contactId: string,
  transaction: Transaction,
): Promise<number | null> {
  const [row] = await query<{ score: number }>(
    workspaceId,
    `SELECT score FROM contacts WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    [contactId],
    transaction,
  );
  return row ? row.score : null;
}

export interface ScoreEvent {
  eventId: string;
  contactId: string;
  type: string;
  metadata?: Record<string, unknown>;
  timestamp?: Date | string;
}

/**
 * Event rules for events of one type in one workspace, at most one per
 * contact: each rule whose `where` matches adds its points within its caps.
 * One statement matches and writes for every event and rule. The stored
 * event is read when there is one (its own columns), else the event as given.
 */
export async function awardEventRules(
  workspaceId: WorkspaceId,
  events: ScoreEvent[],
  rules: RuleDefinition[],
  transaction: Transaction,
): Promise<Array<{ eventId: string; ruleId: string; points: number }>> {
  const binds = Binds.inWorkspace([
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
    workspaceId,
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

/** A manual adjustment's history entry (the score itself moves with `addToScores`). */
export async function insertAdjustment(
  workspaceId: WorkspaceId,
  contactId: string,
  points: number,
  reason: string | null,
  transaction: Transaction,
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO score_history (id, workspace_id, contact_id, points, reason, created_at) VALUES ($2, $1, $3, $4, $5, now())`,
    [newId(), contactId, points, reason],
    transaction,
  );
}

export interface HistoryEntry {
  points: number;
  ruleId: string | null;
  eventId: string | null;
  reason: string | null;
  createdAt: Date;
}

/** The contact's score and its newest history entries; null when there is no such contact. */
export async function scoreOf(
  workspaceId: WorkspaceId,
  contactId: string,
  limit: number,
): Promise<{ score: number; history: HistoryEntry[] } | null> {
  const [contact] = await query<{ score: number }>(
    workspaceId,
    `SELECT score FROM contacts WHERE workspace_id = $1 AND id = $2`,
    [contactId],
  );
  if (!contact) return null;
  const rows = await query<{
    points: number;
    rule_id: string | null;
    event_id: string | null;
    reason: string | null;
    created_at: Date;
  }>(
    workspaceId,
    `SELECT points, rule_id, event_id, reason, created_at FROM score_history
      WHERE workspace_id = $1 AND contact_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3`,
    [contactId, limit],
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

/** Every rule-given entry of the workspace goes, with its decay entries and condition holdings. */
export async function clearRuleEntries(workspaceId: WorkspaceId, transaction: Transaction): Promise<void> {
  await query(
    workspaceId,
    `DELETE FROM score_history WHERE workspace_id = $1 AND rule_id IS NOT NULL`,
    [],
    transaction,
  );
  await query(workspaceId, `DELETE FROM scoring_rule_matches WHERE workspace_id = $1`, [], transaction);
}

/** An event rule's entries rebuilt from the workspace's events, in event order with its caps. Answers how many. */
export async function rebuildEventRule(
  workspaceId: WorkspaceId,
  rule: RuleDefinition,
  transaction: Transaction,
): Promise<number> {
  const binds = Binds.inWorkspace([
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
  const inserted = await query(
    workspaceId,
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
    binds.values,
    transaction,
  );
  return inserted.length;
}

/** Each contact's score becomes the sum of its history. Answers how many scores changed. */
export async function sumScores(workspaceId: WorkspaceId, transaction: Transaction): Promise<number> {
  const changed = await query(
    workspaceId,
    `UPDATE contacts c SET score = t.total
       FROM (SELECT c2.id, COALESCE((SELECT sum(h.points) FROM score_history h WHERE h.contact_id = c2.id), 0)::int AS total
               FROM contacts c2 WHERE c2.workspace_id = $1) t
      WHERE c.id = t.id AND c.score IS DISTINCT FROM t.total
      RETURNING c.id`,
    [],
    transaction,
  );
  return changed.length;
}

/** The version of each workspace's rules, for the engine's rule cache (lib/versioned-cache.ts). */
export const rulesVersionProbe = sqlProbe(
  "scoringRules",
  `SELECT workspace_id, count(*) || '/' || max(updated_at)::text || '/' || max(created_at)::text AS version
       FROM scoring_rules WHERE workspace_id = ANY($1::text[]) GROUP BY workspace_id`,
);
