import { QueryTypes, type Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { database } from "../../lib/database";
import { notFound, validationError } from "../../lib/errors";
import { pageOf, type Page, type PageRequest } from "../../lib/pagination";
import { Binds } from "../segments/filter-compiler";
import type { FieldCondition } from "../segments/filter-schema";
import { compileWhere, periodStartSql, validateWhere, type RuleDefinition } from "./rules";

/** Every query of the scoring area. Workspace id first. Scoring owns `contacts.score` and writes it here. */

export interface RuleView {
  id: string;
  name: string;
  eventType: string;
  where: FieldCondition[] | null;
  points: number;
  maxPerContact: number | null;
  periodCap: { max: number; days: number } | null;
  active: boolean;
  createdAt: Date;
  updatedAt: Date;
}

interface RuleRow {
  id: string;
  name: string;
  event_type: string;
  where: FieldCondition[] | null;
  points: number;
  max_per_contact: number | null;
  period_days: number | null;
  max_per_period: number | null;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const view = (r: RuleRow): RuleView => ({
  id: r.id,
  name: r.name,
  eventType: r.event_type,
  where: r.where,
  points: r.points,
  maxPerContact: r.max_per_contact,
  periodCap: r.period_days && r.max_per_period ? { max: r.max_per_period, days: r.period_days } : null,
  active: r.active,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const definition = (r: RuleRow): RuleDefinition => ({
  id: r.id,
  name: r.name,
  eventType: r.event_type,
  where: r.where,
  points: r.points,
  maxPerContact: r.max_per_contact,
  periodDays: r.period_days,
  maxPerPeriod: r.max_per_period,
});

export function checkWhere(where: unknown) {
  if (where === undefined || where === null) return;
  const issues = validateWhere(where);
  if (issues.length) throw validationError(`Invalid where: ${issues[0].field} ${issues[0].message}`, issues);
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
  points?: number;
  maxPerContact?: number | null;
  periodCap?: { max: number; days: number } | null;
  active?: boolean;
}

export async function createRule(
  workspaceId: string,
  input: Required<Pick<RuleInput, "name" | "eventType" | "points">> & RuleInput,
) {
  checkWhere(input.where);
  const sequelize = await database();
  const id = newId();
  await sequelize.query(
    `INSERT INTO scoring_rules (id, workspace_id, name, event_type, "where", points, max_per_contact, period_days, max_per_period, active)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10)`,
    {
      bind: [
        id,
        workspaceId,
        input.name,
        input.eventType,
        input.where?.length ? JSON.stringify(input.where) : null,
        input.points,
        input.maxPerContact ?? null,
        input.periodCap?.days ?? null,
        input.periodCap?.max ?? null,
        input.active ?? true,
      ],
    },
  );
  return getRule(workspaceId, id);
}

export async function updateRule(workspaceId: string, id: string, input: RuleInput) {
  await getRule(workspaceId, id);
  checkWhere(input.where);
  const sets = ["updated_at = now()"];
  const bind: unknown[] = [workspaceId, id];
  const set = (column: string, value: unknown, cast = "") =>
    sets.push(`${column} = $${bind.push(value)}${cast}`);
  if (input.name !== undefined) set("name", input.name);
  if (input.eventType !== undefined) set("event_type", input.eventType);
  if (input.where !== undefined)
    set(`"where"`, input.where?.length ? JSON.stringify(input.where) : null, "::jsonb");
  if (input.points !== undefined) set("points", input.points);
  if (input.maxPerContact !== undefined) set("max_per_contact", input.maxPerContact);
  if (input.periodCap !== undefined) {
    set("period_days", input.periodCap?.days ?? null);
    set("max_per_period", input.periodCap?.max ?? null);
  }
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
 * its points, within the rule's caps. Idempotent per event id: a retried
 * event hits the unique (rule_id, event_id) and adds nothing.
 */
export async function applyEvent(workspaceId: string, event: ScoreEvent): Promise<ApplyResult | null> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const before = await lockContact(workspaceId, event.contactId, transaction);
    if (before === null) return null;
    const rules = (
      await sequelize.query<RuleRow>(
        `SELECT * FROM scoring_rules WHERE workspace_id = $1 AND event_type = $2 AND active ORDER BY created_at, id`,
        {
          bind: [workspaceId, event.type],
          type: QueryTypes.SELECT,
          transaction,
        },
      )
    ).map(definition);
    const result: ApplyResult = { scoreBefore: before, score: before, applied: [] };
    if (rules.length === 0) return result;

    // The stored event when there is one (its own columns), else the event as given.
    const binds = new Binds([
      workspaceId,
      event.eventId,
      event.type,
      JSON.stringify(event.metadata ?? {}),
      toIso(event.timestamp),
    ]);
    const predicates = rules.map((r) => compileWhere(r.where, binds));
    const [match] = await sequelize.query<{ m: boolean[]; ts: Date }>(
      `WITH stored AS (
         SELECT type, metadata, timestamp, session_id, page_url, referrer, utm_source, utm_medium, utm_campaign
           FROM events WHERE workspace_id = $1 AND id = $2
       ), e AS (
         SELECT * FROM stored
         UNION ALL
         SELECT $3::text, $4::jsonb, COALESCE($5::timestamptz, now()), NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text
          WHERE NOT EXISTS (SELECT 1 FROM stored)
       )
       SELECT ARRAY[${predicates.join(", ")}]::boolean[] AS m, e.timestamp AS ts FROM e`,
      { bind: binds.values, type: QueryTypes.SELECT, transaction },
    );

    for (const [k, rule] of rules.entries()) {
      if (!match.m[k]) continue;
      const [row] = await sequelize.query<{ points: number }>(
        `INSERT INTO score_history (id, workspace_id, contact_id, points, rule_id, event_id, event_at, reason, created_at)
         SELECT $1, $2, $3, $4, $5, $6, $7::timestamptz, $8, now()
          WHERE ($9::int IS NULL OR (SELECT count(*) FROM score_history h WHERE h.rule_id = $5 AND h.contact_id = $3) < $9::int)
            AND ($10::int IS NULL OR $11::int IS NULL OR (
                 SELECT count(*) FROM score_history h WHERE h.rule_id = $5 AND h.contact_id = $3
                    AND h.event_at >= ${periodStartSql("$7::timestamptz", "$10::int")}
                    AND h.event_at < ${periodStartSql("$7::timestamptz", "$10::int")} + make_interval(days => $10::int)) < $11::int)
         ON CONFLICT (rule_id, event_id) DO NOTHING
         RETURNING points`,
        {
          bind: [
            newId(),
            workspaceId,
            event.contactId,
            rule.points,
            rule.id,
            event.eventId,
            match.ts,
            rule.name,
            rule.maxPerContact,
            rule.periodDays,
            rule.maxPerPeriod,
          ],
          type: QueryTypes.SELECT,
          transaction,
        },
      );
      if (row) result.applied.push({ ruleId: rule.id, points: row.points });
    }
    const delta = result.applied.reduce((sum, a) => sum + a.points, 0);
    if (delta !== 0) {
      // Scoring owns the score: it is written here and nowhere else.
      await sequelize.query(`UPDATE contacts SET score = score + $3 WHERE workspace_id = $1 AND id = $2`, {
        bind: [workspaceId, event.contactId, delta],
        transaction,
      });
      result.score = before + delta;
    }
    return result;
  });
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
    const before = await lockContact(workspaceId, contactId, transaction);
    if (before === null) throw notFound("Contact");
    await sequelize.query(
      `INSERT INTO score_history (id, workspace_id, contact_id, points, reason, created_at) VALUES ($1, $2, $3, $4, $5, now())`,
      { bind: [newId(), workspaceId, contactId, points, reason], transaction },
    );
    await sequelize.query(`UPDATE contacts SET score = score + $3 WHERE workspace_id = $1 AND id = $2`, {
      bind: [workspaceId, contactId, points],
      transaction,
    });
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
 * Rebuild every rule-given score entry of the workspace from its events, in
 * event order with the same caps, then set each contact's score to the sum
 * of its history (manual adjustments kept). Answers how many scores changed.
 */
export async function recalculate(
  workspaceId: string,
  progress: (done: number, total: number) => Promise<void>,
): Promise<{ rules: number; entries: number; contactsChanged: number }> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await sequelize.query(`SELECT pg_advisory_xact_lock(hashtextextended('scoring:recalculate:' || $1, 0))`, {
      bind: [workspaceId],
      type: QueryTypes.SELECT,
      transaction,
    });
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
    await sequelize.query(`DELETE FROM score_history WHERE workspace_id = $1 AND rule_id IS NOT NULL`, {
      bind: [workspaceId],
      transaction,
    });
    let entries = 0;
    for (const [k, rule] of rules.entries()) {
      const binds = new Binds([
        workspaceId,
        rule.eventType,
        rule.id,
        rule.points,
        rule.maxPerContact,
        rule.periodDays,
        rule.maxPerPeriod,
        rule.name,
      ]);
      const where = compileWhere(rule.where, binds);
      const period = `CASE WHEN $6::int IS NULL THEN 0 ELSE floor(extract(epoch FROM e.timestamp) / ($6::int * 86400)) END`;
      const inserted = await sequelize.query(
        `INSERT INTO score_history (id, workspace_id, contact_id, points, rule_id, event_id, event_at, reason, created_at)
         SELECT gen_random_uuid()::text, $1, y.contact_id, $4, $3, y.id, y.timestamp, $8, now()
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
    const changed = await sequelize.query(
      `UPDATE contacts c SET score = t.total
         FROM (SELECT c2.id, COALESCE((SELECT sum(h.points) FROM score_history h WHERE h.contact_id = c2.id), 0)::int AS total
                 FROM contacts c2 WHERE c2.workspace_id = $1) t
        WHERE c.id = t.id AND c.score IS DISTINCT FROM t.total
        RETURNING c.id`,
      { bind: [workspaceId], type: QueryTypes.SELECT, transaction },
    );
    return { rules: rules.length, entries, contactsChanged: changed.length };
  });
}
