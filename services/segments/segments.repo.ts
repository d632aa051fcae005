import { QueryTypes, type Transaction } from "sequelize";
import { config } from "../../lib/config";
import { newId } from "../../lib/crypto";
import { Binds, database } from "../../lib/database";
import { conflict, queryTooExpensive, validationError } from "../../lib/errors";
import { pageOf, type Page, type PageRequest } from "../../lib/pagination";
import { compileField, compileFilter } from "./filter-compiler";
import {
  findCycle,
  validateFilter,
  type FieldCondition,
  type FilterFacts,
  type FilterGroup,
} from "./filter-schema";

/** Every query of the segments area except membership evaluation (membership.ts). Workspace id first. */

export type SegmentType = "dynamic" | "static";

export interface SegmentView {
  id: string;
  name: string;
  description: string | null;
  type: SegmentType;
  filter: FilterGroup | null;
  memberCount: number | null;
  createdAt: Date;
  updatedAt: Date;
}

interface SegmentRow {
  id: string;
  name: string;
  description: string | null;
  type: SegmentType;
  filter: FilterGroup | null;
  computing: boolean;
  member_count: string;
  created_at: Date;
  updated_at: Date;
}

const view = (r: SegmentRow): SegmentView => ({
  id: r.id,
  name: r.name,
  description: r.description,
  type: r.type,
  filter: r.filter,
  memberCount: r.computing ? null : Number(r.member_count),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const SELECT_SEGMENT = `SELECT s.id, s.name, s.description, s.type, s.filter, s.computing, s.created_at, s.updated_at,
       (SELECT count(*) FROM segment_members sm WHERE sm.segment_id = s.id) AS member_count
  FROM segments s`;

export async function listSegments(
  workspaceId: string,
  page: PageRequest,
  type?: SegmentType,
): Promise<Page<SegmentView>> {
  const sequelize = await database();
  const bind: unknown[] = [workspaceId, page.limit, page.offset];
  const typeFilter = type ? `AND s.type = $${bind.push(type)}` : "";
  const rows = await sequelize.query<SegmentRow>(
    `${SELECT_SEGMENT} WHERE s.workspace_id = $1 ${typeFilter} ORDER BY s.created_at DESC, s.id DESC LIMIT $2 OFFSET $3`,
    { bind, type: QueryTypes.SELECT },
  );
  const [{ n }] = await sequelize.query<{ n: string }>(
    `SELECT count(*) AS n FROM segments s WHERE s.workspace_id = $1 ${type ? "AND s.type = $2" : ""}`,
    { bind: type ? [workspaceId, type] : [workspaceId], type: QueryTypes.SELECT },
  );
  return pageOf(rows.map(view), Number(n), page);
}

export async function getSegment(
  workspaceId: string,
  id: string,
  transaction?: Transaction,
): Promise<SegmentView | null> {
  const sequelize = await database();
  const [row] = await sequelize.query<SegmentRow>(
    `${SELECT_SEGMENT} WHERE s.workspace_id = $1 AND s.id = $2`,
    {
      bind: [workspaceId, id],
      type: QueryTypes.SELECT,
      transaction,
    },
  );
  return row ? view(row) : null;
}

/**
 * Validate a filter for saving as segment `selfId`: the language, then the
 * references (each segment must exist in this workspace) and cycles.
 */
export async function checkFilter(
  workspaceId: string,
  filter: unknown,
  selfId: string,
): Promise<FilterFacts> {
  const { issues, facts } = validateFilter(filter);
  if (issues.length) throw validationError(`Invalid filter: ${issues[0].field} ${issues[0].message}`, issues);
  if (facts.segmentRefs.length === 0) return facts;
  const sequelize = await database();
  const rows = await sequelize.query<{ id: string; depends_on: string[] }>(
    `SELECT id, depends_on FROM segments WHERE workspace_id = $1`,
    { bind: [workspaceId], type: QueryTypes.SELECT },
  );
  const graph = new Map(rows.filter((r) => r.id !== selfId).map((r) => [r.id, r.depends_on]));
  const missing = facts.segmentRefs.filter((ref) => ref.id !== selfId && !graph.has(ref.id));
  if (missing.length) {
    const details = missing.map((m) => ({ field: m.path, message: "no such segment in this workspace" }));
    throw validationError(`Invalid filter: ${details[0].field} ${details[0].message}`, details);
  }
  const cycle = findCycle(selfId, facts.segmentIds, graph);
  if (cycle) {
    const ref = facts.segmentRefs.find((r) => r.id === cycle[1]) ?? facts.segmentRefs[0];
    const message = `makes a cycle between segments (${cycle.join(" -> ")})`;
    throw validationError(`Invalid filter: ${ref.path} ${message}`, [{ field: ref.path, message }]);
  }
  return facts;
}

/** Whether one contact matches a checked filter now; false for a contact not in the workspace. */
export async function contactMatches(
  workspaceId: string,
  contactId: string,
  filter: FilterGroup,
): Promise<boolean> {
  return (await contactsMatching(workspaceId, [contactId], filter)).length > 0;
}

/** A page of a segment's member ids in id order, after `after` (keyset: a member entering or leaving moves no page). */
export async function memberIdsPage(
  workspaceId: string,
  segmentId: string,
  after: string,
  limit: number,
): Promise<string[]> {
  const sequelize = await database();
  const rows = await sequelize.query<{ id: string }>(
    `SELECT sm.contact_id AS id FROM segment_members sm JOIN contacts c ON c.id = sm.contact_id
      WHERE sm.segment_id = $1 AND c.workspace_id = $2 AND sm.contact_id > $3
      ORDER BY sm.contact_id LIMIT $4`,
    { bind: [segmentId, workspaceId, after, limit], type: QueryTypes.SELECT },
  );
  return rows.map((r) => r.id);
}

/** Which of `segmentIds` (of the workspace) the contact is a member of now. */
export async function memberOf(
  workspaceId: string,
  contactId: string,
  segmentIds: string[],
): Promise<string[]> {
  const sequelize = await database();
  const rows = await sequelize.query<{ id: string }>(
    `SELECT s.id FROM segments s JOIN segment_members sm ON sm.segment_id = s.id
      WHERE s.workspace_id = $1 AND sm.contact_id = $2 AND s.id = ANY($3::text[])`,
    { bind: [workspaceId, contactId, segmentIds], type: QueryTypes.SELECT },
  );
  return rows.map((r) => r.id);
}

/** Those of `contactIds` (of the workspace) a checked filter matches now. */
export async function contactsMatching(
  workspaceId: string,
  contactIds: string[],
  filter: FilterGroup,
): Promise<string[]> {
  const sequelize = await database();
  const binds = new Binds([workspaceId, contactIds]);
  const predicate = compileFilter(filter, binds, { mode: "row", workspaceParam: "$1" });
  const rows = await sequelize.query<{ id: string }>(
    `SELECT c.id FROM contacts c WHERE c.workspace_id = $1 AND c.id = ANY($2::text[]) AND ${predicate}`,
    { bind: binds.values, type: QueryTypes.SELECT },
  );
  return rows.map((r) => r.id);
}

/** Whether one event of the workspace meets checked conditions on its fields; false for an unknown event. */
export async function eventMatches(
  workspaceId: string,
  eventId: string,
  where: FieldCondition[],
): Promise<boolean> {
  const sequelize = await database();
  const binds = new Binds([workspaceId, eventId]);
  const predicate = where.length ? where.map((w) => compileField(w, binds, "event")).join(" AND ") : "true";
  const [row] = await sequelize.query<{ matches: boolean }>(
    `SELECT COALESCE(${predicate}, false) AS matches FROM events e WHERE e.workspace_id = $1 AND e.id = $2`,
    { bind: binds.values, type: QueryTypes.SELECT },
  );
  return row?.matches ?? false;
}

/** Contacts in the workspace; over the sync limit, segment (re)computation runs as a job. */
export async function contactCount(workspaceId: string): Promise<number> {
  const sequelize = await database();
  const [{ n }] = await sequelize.query<{ n: string }>(
    `SELECT count(*) AS n FROM contacts WHERE workspace_id = $1`,
    {
      bind: [workspaceId],
      type: QueryTypes.SELECT,
    },
  );
  return Number(n);
}

export interface SegmentInput {
  name: string;
  description?: string | null;
  type: SegmentType;
  filter?: FilterGroup;
}

export async function insertSegment(
  workspaceId: string,
  id: string,
  input: SegmentInput,
  facts: FilterFacts | null,
  computing: boolean,
): Promise<void> {
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO segments (id, workspace_id, name, description, type, filter, depends_on, event_types, uses_score, computing,
                           time_relative, next_refresh_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::text[], $8::text[], $9, $10,
             $11, CASE WHEN $11 THEN now() + make_interval(secs => $12::double precision / 1000) END)`,
    {
      bind: [
        id,
        workspaceId,
        input.name,
        input.description ?? null,
        input.type,
        input.type === "dynamic" ? JSON.stringify(input.filter) : null,
        facts?.segmentIds ?? [],
        facts?.eventTypes ?? [],
        facts?.usesScore ?? false,
        computing,
        facts?.timeRelative ?? false,
        config().segmentTimeRefreshMs,
      ],
    },
  );
}

export async function updateSegmentRow(
  workspaceId: string,
  id: string,
  changes: {
    name?: string;
    description?: string | null;
    filter?: FilterGroup;
    facts?: FilterFacts;
    computing?: boolean;
  },
): Promise<void> {
  const sequelize = await database();
  const sets: string[] = ["updated_at = now()"];
  const bind: unknown[] = [workspaceId, id];
  if (changes.name !== undefined) sets.push(`name = $${bind.push(changes.name)}`);
  if (changes.description !== undefined) sets.push(`description = $${bind.push(changes.description)}`);
  if (changes.filter !== undefined && changes.facts) {
    sets.push(`filter = $${bind.push(JSON.stringify(changes.filter))}::jsonb`);
    sets.push(`depends_on = $${bind.push(changes.facts.segmentIds)}::text[]`);
    sets.push(`event_types = $${bind.push(changes.facts.eventTypes)}::text[]`);
    sets.push(`uses_score = $${bind.push(changes.facts.usesScore)}`);
    const timeRelative = `$${bind.push(changes.facts.timeRelative)}::boolean`;
    sets.push(`time_relative = ${timeRelative}`);
    // Computed now, so the first time-driven refresh is one period away.
    sets.push(
      `next_refresh_at = CASE WHEN ${timeRelative} THEN now() + make_interval(secs => $${bind.push(config().segmentTimeRefreshMs)}::double precision / 1000) END`,
    );
  }
  if (changes.computing !== undefined) sets.push(`computing = $${bind.push(changes.computing)}`);
  await sequelize.query(`UPDATE segments SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2`, {
    bind,
  });
}

export async function setComputing(segmentId: string, computing: boolean): Promise<void> {
  const sequelize = await database();
  await sequelize.query(`UPDATE segments SET computing = $2 WHERE id = $1`, { bind: [segmentId, computing] });
}

/**
 * Claim up to `limit` time-relative dynamic segments whose refresh is due, across workspaces:
 * their `next_refresh_at` moves one period ahead in the same statement, and rows another
 * replica is claiming are skipped, so two replicas never refresh the same segment at once.
 */
export async function claimTimeRefresh(
  limit: number,
  periodMs: number,
): Promise<Array<{ id: string; workspaceId: string }>> {
  const sequelize = await database();
  return sequelize.query<{ id: string; workspaceId: string }>(
    `UPDATE segments s SET next_refresh_at = now() + make_interval(secs => $2::double precision / 1000)
       FROM (SELECT id FROM segments
              WHERE time_relative AND type = 'dynamic' AND NOT computing AND next_refresh_at <= now()
              ORDER BY next_refresh_at LIMIT $1 FOR UPDATE SKIP LOCKED) due
      WHERE s.id = due.id
      RETURNING s.id, s.workspace_id AS "workspaceId"`,
    { bind: [limit, periodMs], type: QueryTypes.SELECT },
  );
}

/** Delete a segment; refused while another segment's filter references it. False: no such segment. */
export async function deleteSegment(workspaceId: string, id: string): Promise<boolean> {
  const sequelize = await database();
  const users = await sequelize.query<{ id: string; name: string }>(
    `SELECT id, name FROM segments WHERE workspace_id = $1 AND $2 = ANY(depends_on) AND id <> $2`,
    { bind: [workspaceId, id], type: QueryTypes.SELECT },
  );
  if (users.length)
    throw conflict(`The segment is used by the filter of segment '${users[0].name}' (${users[0].id})`);
  // Its members and log go with it (trigger segments_drop_members, migration 0020).
  const deleted = await sequelize.query(
    `DELETE FROM segments WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    {
      bind: [workspaceId, id],
      type: QueryTypes.SELECT,
    },
  );
  return deleted.length > 0;
}

export interface MemberSummary {
  id: string;
  email: string | null;
  firstName: string | null;
  lastName: string | null;
  enteredAt: Date;
}

export async function listMembers(
  workspaceId: string,
  segmentId: string,
  page: PageRequest,
): Promise<Page<MemberSummary>> {
  const sequelize = await database();
  const rows = await sequelize.query<{
    id: string;
    email: string;
    first_name: string;
    last_name: string;
    entered_at: Date;
  }>(
    `SELECT c.id, c.email, c.first_name, c.last_name, sm.entered_at
       FROM segment_members sm JOIN contacts c ON c.id = sm.contact_id
      WHERE sm.segment_id = $1 AND c.workspace_id = $2
      ORDER BY sm.entered_at DESC, sm.contact_id DESC LIMIT $3 OFFSET $4`,
    { bind: [segmentId, workspaceId, page.limit, page.offset], type: QueryTypes.SELECT },
  );
  const [{ n }] = await sequelize.query<{ n: string }>(
    `SELECT count(*) AS n FROM segment_members WHERE segment_id = $1`,
    {
      bind: [segmentId],
      type: QueryTypes.SELECT,
    },
  );
  return pageOf(
    rows.map((r) => ({
      id: r.id,
      email: r.email,
      firstName: r.first_name,
      lastName: r.last_name,
      enteredAt: r.entered_at,
    })),
    Number(n),
    page,
  );
}

/** Every id must be a contact of this workspace; 400 naming the bad entries otherwise. */
export async function assertContacts(workspaceId: string, contactIds: string[]): Promise<void> {
  const sequelize = await database();
  const found = await sequelize.query<{ id: string }>(
    `SELECT id FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[])`,
    { bind: [workspaceId, [...new Set(contactIds)]], type: QueryTypes.SELECT },
  );
  const known = new Set(found.map((r) => r.id));
  const unknown = contactIds.map((id, i) => ({ id, i })).filter((x) => !known.has(x.id));
  if (unknown.length) {
    const details = unknown
      .slice(0, 20)
      .map((u) => ({ field: `contactIds[${u.i}]`, message: "no such contact in this workspace" }));
    throw validationError(`${details[0].field} ${details[0].message}`, details);
  }
}

/** A static segment's explicit members: add contacts (all must exist in this workspace). Answers how many were new. */
export async function addStaticMembers(
  workspaceId: string,
  segmentId: string,
  contactIds: string[],
): Promise<number> {
  await assertContacts(workspaceId, contactIds);
  const sequelize = await database();
  const inserted = await sequelize.query(
    `INSERT INTO segment_members (segment_id, contact_id, entered_at) SELECT $1, id, now() FROM unnest($2::text[]) AS id
     ON CONFLICT DO NOTHING RETURNING contact_id`,
    { bind: [segmentId, [...new Set(contactIds)]], type: QueryTypes.SELECT },
  );
  return inserted.length;
}

/** The segment is one of the workspace's (the caller found it); answers how many were members. */
export async function removeStaticMembers(segmentId: string, contactIds: string[]): Promise<number> {
  const sequelize = await database();
  const removed = await sequelize.query(
    `DELETE FROM segment_members WHERE segment_id = $1 AND contact_id = ANY($2::text[]) RETURNING contact_id`,
    { bind: [segmentId, [...new Set(contactIds)]], type: QueryTypes.SELECT },
  );
  return removed.length;
}

export interface GrowthPoint {
  date: string;
  memberCount: number;
  entered: number;
  exited: number;
}

/**
 * Daily series from the membership log (complete from the segment's
 * creation, so the running sum is the member count at the end of each day).
 * Days are UTC.
 */
export async function growth(
  segment: SegmentView,
  range: { from: Date; to: Date },
): Promise<{ segmentId: string; memberCount: number | null; series: GrowthPoint[] }> {
  const segmentId = segment.id;
  const sequelize = await database();
  const rows = await sequelize.query<{ day: string; entered: string; exited: string; member_count: string }>(
    `WITH days AS (
       SELECT d::date AS day FROM generate_series(($2::timestamptz AT TIME ZONE 'UTC')::date,
                                                  ($3::timestamptz AT TIME ZONE 'UTC')::date, interval '1 day') AS d
     ),
     daily AS (
       SELECT (created_at AT TIME ZONE 'UTC')::date AS day,
              count(*) FILTER (WHERE change = 'entered') AS entered,
              count(*) FILTER (WHERE change = 'exited') AS exited
         FROM segment_membership_log WHERE segment_id = $1 GROUP BY 1
     ),
     before AS (
       SELECT COALESCE(sum(CASE change WHEN 'entered' THEN 1 ELSE -1 END), 0) AS n
         FROM segment_membership_log WHERE segment_id = $1 AND (created_at AT TIME ZONE 'UTC')::date < (SELECT min(day) FROM days)
     )
     SELECT to_char(days.day, 'YYYY-MM-DD') AS day, COALESCE(daily.entered, 0) AS entered, COALESCE(daily.exited, 0) AS exited,
            (SELECT n FROM before) + sum(COALESCE(daily.entered, 0) - COALESCE(daily.exited, 0)) OVER (ORDER BY days.day) AS member_count
       FROM days LEFT JOIN daily ON daily.day = days.day ORDER BY days.day`,
    { bind: [segmentId, range.from.toISOString(), range.to.toISOString()], type: QueryTypes.SELECT },
  );
  return {
    segmentId,
    memberCount: segment.memberCount,
    series: rows.map((r) => ({
      date: r.day,
      memberCount: Number(r.member_count),
      entered: Number(r.entered),
      exited: Number(r.exited),
    })),
  };
}

/** Public contact fields (contract "Contacts") for preview samples. */
export interface ContactSample {
  id: string;
  email: string | null;
  phone: string | null;
  firstName: string | null;
  lastName: string | null;
  externalId: string | null;
  tags: string[];
  attributes: Record<string, unknown>;
  stage: string | null;
  score: number;
  createdAt: Date;
  updatedAt: Date;
}

const SAMPLE_SIZE = 10;

/** Count and first matches of an unsaved filter, bounded by a statement timeout. Saves nothing. */
export async function preview(
  workspaceId: string,
  filter: FilterGroup,
): Promise<{ count: number; sample: ContactSample[] }> {
  const sequelize = await database();
  const timeout = Math.max(1, config().segmentPreviewTimeoutMs);
  try {
    return await sequelize.transaction(async (transaction) => {
      await sequelize.query(`SET TRANSACTION READ ONLY`, { transaction });
      await sequelize.query(`SET LOCAL statement_timeout = ${Number(timeout)}`, { transaction });
      await sequelize.query(`SET LOCAL work_mem = '256MB'`, { transaction });
      const binds = new Binds([workspaceId]);
      const predicate = compileFilter(filter, binds, { mode: "set", workspaceParam: "$1" });
      const [{ n }] = await sequelize.query<{ n: string }>(
        `SELECT count(*) AS n FROM contacts c WHERE c.workspace_id = $1 AND ${predicate}`,
        { bind: binds.values, type: QueryTypes.SELECT, transaction },
      );
      const rows = await sequelize.query<Record<string, unknown>>(
        `SELECT c.id, c.email, c.phone, c.first_name, c.last_name, c.external_id, c.tags, c.attributes, c.stage, c.score,
                c.created_at, c.updated_at
           FROM contacts c WHERE c.workspace_id = $1 AND ${predicate}
          ORDER BY c.created_at DESC, c.id DESC LIMIT ${SAMPLE_SIZE}`,
        { bind: binds.values, type: QueryTypes.SELECT, transaction },
      );
      return {
        count: Number(n),
        sample: rows.map((r) => ({
          id: r.id as string,
          email: r.email as string | null,
          phone: r.phone as string | null,
          firstName: r.first_name as string | null,
          lastName: r.last_name as string | null,
          externalId: r.external_id as string | null,
          tags: r.tags as string[],
          attributes: r.attributes as Record<string, unknown>,
          stage: r.stage as string | null,
          score: r.score as number,
          createdAt: r.created_at as Date,
          updatedAt: r.updated_at as Date,
        })),
      };
    });
  } catch (err) {
    const code = (err as { original?: { code?: string }; parent?: { code?: string } }).original?.code;
    if (code === "57014") {
      throw queryTooExpensive(
        `The preview took longer than ${timeout} ms; narrow the filter or save it and recompute as a job`,
      );
    }
    throw err;
  }
}

export const newSegmentId = newId;

/** How many segments' filters use this one (they follow its changes). */
export async function dependentCount(workspaceId: string, segmentId: string): Promise<number> {
  const sequelize = await database();
  const [{ n }] = await sequelize.query<{ n: string }>(
    `SELECT count(*) AS n FROM segments WHERE workspace_id = $1 AND $2 = ANY(depends_on)`,
    { bind: [workspaceId, segmentId], type: QueryTypes.SELECT },
  );
  return Number(n);
}

/** The type of a recorded event, or undefined. */
export async function eventTypeOf(workspaceId: string, eventId: string): Promise<string | undefined> {
  const sequelize = await database();
  const [row] = await sequelize.query<{ type: string }>(
    `SELECT type FROM events WHERE workspace_id = $1 AND id = $2`,
    {
      bind: [workspaceId, eventId],
      type: QueryTypes.SELECT,
    },
  );
  return row?.type;
}
