import { type Transaction } from "sequelize";
import { Binds, query, queryAcrossWorkspacesPrepared, queryPrepared } from "../../lib/database";
import { compileFilter, type CompileMode } from "../segments/filter-compiler";
import type { RuleDefinition } from "./rules";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Scoring rules on a contact condition. A contact holds a rule's points while
 * it matches the condition: one row of `scoring_rule_matches` per (rule,
 * contact) (its primary key makes the award idempotent), a `+points` history
 * entry when it comes to match and a `-points` one (the points it was given)
 * when it stops. Conditions compile with the segments compiler: one
 * parameterised predicate, values only ever bound.
 *
 * Lock order, everywhere in scoring: the workspace's shared advisory lock
 * (recalculation takes it exclusively), then contact rows in id order, then
 * history and match rows.
 */

export interface ConditionChange {
  ruleId: string;
  contactId: string;
  points: number;
}

/** Up to this many contacts the predicates take the per-contact shape; above, the set shape. */
const ROW_MODE_MAX = 1000;
const modeFor = (contactIds: string[] | null): CompileMode =>
  contactIds && contactIds.length <= ROW_MODE_MAX ? "row" : "set";

/** The advisory lock key of a workspace's score writers (SQL over a workspace id expression). */
const workspaceLockKey = (workspaceIdSql: string) =>
  `hashtextextended('scoring:recalculate:' || ${workspaceIdSql}, 0)`;

/** Held by every score writer; recalculation takes it exclusively, so it never interleaves with them. */
export async function holdWorkspace(workspaceId: WorkspaceId, transaction: Transaction, exclusive = false) {
  const fn = exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared";
  await query(workspaceId, `SELECT ${fn}(${workspaceLockKey("$1")})`, [], transaction);
}

/**
 * `holdWorkspace` and `lockContacts` for a batch, in one statement and without
 * waiting: the workspaces not being recalculated are held, and their contacts
 * that no other transaction holds are locked in id order (SKIP LOCKED).
 * Answers the locked contacts with their scores.
 */
export async function tryHoldAndLockContacts(
  contacts: Array<{ workspaceId: WorkspaceId; contactId: string }>,
  transaction: Transaction,
): Promise<Array<{ workspace_id: WorkspaceId; id: string; score: number }>> {
  return queryAcrossWorkspacesPrepared<{ workspace_id: WorkspaceId; id: string; score: number }>(
    `WITH held AS MATERIALIZED (
       SELECT ws FROM unnest($3::text[]) AS ws WHERE pg_try_advisory_xact_lock_shared(${workspaceLockKey("ws")})
     )
     SELECT c.workspace_id, c.id, c.score FROM contacts c
      WHERE (c.workspace_id, c.id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
        AND c.workspace_id IN (SELECT ws FROM held)
      ORDER BY c.id FOR UPDATE OF c SKIP LOCKED`,
    [
      contacts.map((c) => c.workspaceId),
      contacts.map((c) => c.contactId),
      [...new Set(contacts.map((c) => c.workspaceId))],
    ],
    transaction,
  );
}

/** Lock contacts in id order (the order every scoring writer uses); answers those that exist. */
export async function lockContacts(
  workspaceId: WorkspaceId,
  contactIds: string[],
  transaction: Transaction,
): Promise<string[]> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `SELECT id FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE`,
    [contactIds],
    transaction,
  );
  return rows.map((r) => r.id);
}

/**
 * Contacts (among `contactIds`, or the whole workspace) whose match of some
 * rule differs from the points they hold: a plain read, so the common case
 * (nothing to change) takes no lock and writes nothing.
 */
export async function pendingContacts(
  workspaceId: WorkspaceId,
  rules: RuleDefinition[],
  contactIds: string[] | null,
): Promise<string[]> {
  const conditional = rules.filter((r) => r.condition);
  if (conditional.length === 0 || contactIds?.length === 0) return [];
  const binds = Binds.inWorkspace();
  const ids = contactIds ? binds.p(contactIds, "text[]") : null;
  const mode = modeFor(contactIds);
  const parts = conditional.map((rule) => {
    const ruleId = binds.p(rule.id, "text");
    const predicate = compileFilter(rule.condition!, binds, { mode, workspaceParam: "$1" });
    return `SELECT COALESCE(m.id, h.contact_id) AS id
              FROM (SELECT c.id FROM contacts c
                     WHERE c.workspace_id = $1${ids ? ` AND c.id = ANY(${ids})` : ""} AND ${predicate}) m
              FULL JOIN (SELECT x.contact_id FROM scoring_rule_matches x
                          WHERE x.rule_id = ${ruleId}${ids ? ` AND x.contact_id = ANY(${ids})` : ""}) h
                ON h.contact_id = m.id
             WHERE m.id IS NULL OR h.contact_id IS NULL`;
  });
  const rows = await query<{ id: string }>(
    workspaceId,
    `SELECT DISTINCT d.id FROM (${parts.join(" UNION ALL ")}) d ORDER BY d.id`,
    binds.values,
  );
  return rows.map((r) => r.id);
}

/**
 * Bring locked contacts' holdings of each condition rule in line with the
 * condition: one set-shaped statement per rule awards the contacts that came
 * to match and takes the points back from those that stopped, with their
 * history entries. Answers the changes; the caller adds them to the scores.
 */
export async function applyConditionRules(
  workspaceId: WorkspaceId,
  contactIds: string[],
  rules: RuleDefinition[],
  transaction: Transaction,
): Promise<ConditionChange[]> {
  if (contactIds.length === 0) return [];
  const changes: ConditionChange[] = [];
  for (const rule of rules) {
    if (!rule.condition) continue;
    const binds = Binds.inWorkspace([contactIds, rule.id, rule.points, rule.name]);
    const predicate = compileFilter(rule.condition, binds, {
      mode: modeFor(contactIds),
      workspaceParam: "$1",
    });
    const rows = await query<{ contactId: string; points: number }>(
      workspaceId,
      `WITH m AS (
         SELECT c.id FROM contacts c WHERE c.workspace_id = $1 AND c.id = ANY($2::text[]) AND ${predicate}
       ), gained AS (
         INSERT INTO scoring_rule_matches (rule_id, contact_id, workspace_id, points, matched_at)
         SELECT $3, m.id, $1, $4::int, now() FROM m
         ON CONFLICT (rule_id, contact_id) DO NOTHING
         RETURNING contact_id, points
       ), lost AS (
         DELETE FROM scoring_rule_matches x
          WHERE x.rule_id = $3 AND x.contact_id = ANY($2::text[]) AND x.contact_id NOT IN (SELECT id FROM m)
         RETURNING x.contact_id, -x.points AS points
       ), changes AS (
         SELECT contact_id, points, $5::text AS reason FROM gained
         UNION ALL
         SELECT contact_id, points, $5::text || ' (condition no longer met)' FROM lost
       ), logged AS (
         INSERT INTO score_history (id, workspace_id, contact_id, points, rule_id, event_at, reason, created_at)
         SELECT gen_random_uuid()::text, $1, contact_id, points, $3, now(), reason, now() FROM changes
       )
       SELECT contact_id AS "contactId", points FROM changes`,
      binds.values,
      transaction,
    );
    for (const row of rows) changes.push({ ruleId: rule.id, contactId: row.contactId, points: row.points });
  }
  return changes;
}

/** Add each contact's total change to its score; answers the contacts whose score moved. */
export async function addToScores(
  workspaceId: WorkspaceId,
  changes: Array<{ contactId: string; points: number }>,
  transaction: Transaction,
): Promise<string[]> {
  const totals = new Map<string, number>();
  for (const c of changes) totals.set(c.contactId, (totals.get(c.contactId) ?? 0) + c.points);
  const moved = [...totals].filter(([, delta]) => delta !== 0);
  if (moved.length === 0) return [];
  // Scoring owns the score: it is written by scoring's repo modules and nowhere else. The workspace is
  // checked behind a fence (OFFSET 0), so the rows are found by primary key, never by a workspace scan
  // planned from stale statistics.
  await queryPrepared(
    workspaceId,
    `UPDATE contacts c SET score = c.score + d.delta
       FROM unnest($2::text[], $3::int[]) AS d(id, delta)
       JOIN LATERAL (SELECT x.workspace_id FROM contacts x WHERE x.id = d.id OFFSET 0) k ON k.workspace_id = $1
      WHERE c.id = d.id`,
    [moved.map(([id]) => id), moved.map(([, delta]) => delta)],
    transaction,
  );
  return moved.map(([id]) => id);
}

/** Recalculation: give each condition rule's points to every contact matching it now (holdings cleared before). */
export async function rebuildConditionRule(
  workspaceId: WorkspaceId,
  rule: RuleDefinition,
  transaction: Transaction,
): Promise<number> {
  if (!rule.condition) return 0;
  const binds = Binds.inWorkspace([rule.id, rule.points, rule.name]);
  const predicate = compileFilter(rule.condition, binds, { mode: "set", workspaceParam: "$1" });
  const rows = await query(
    workspaceId,
    `WITH m AS (
       INSERT INTO scoring_rule_matches (rule_id, contact_id, workspace_id, points, matched_at)
       SELECT $2, c.id, $1, $3::int, now() FROM contacts c WHERE c.workspace_id = $1 AND ${predicate}
       RETURNING contact_id
     )
     INSERT INTO score_history (id, workspace_id, contact_id, points, rule_id, event_at, reason, created_at)
     SELECT gen_random_uuid()::text, $1, m.contact_id, $3::int, $2, now(), $4, now() FROM m
     RETURNING 1`,
    binds.values,
    transaction,
  );
  return rows.length;
}
