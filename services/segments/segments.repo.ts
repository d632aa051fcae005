import { type Transaction } from "sequelize";
import { config } from "../../lib/config";
import { newId } from "../../lib/crypto";
import { Binds, query, queryAcrossWorkspaces } from "../../lib/database";
import type { QueueFigures } from "../../lib/business-metrics";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import { conflict, validationError } from "../../lib/errors";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { findCycle, validateFilter, type FilterFacts, type FilterGroup } from "./filter-schema";
import type { WorkspaceId } from "../../lib/tenancy";

/** The segment rows: list, read, save, delete, filter checks. Members, matching and membership evaluation have their repos beside it. Workspace id first. */

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
  workspaceId: WorkspaceId,
  page: PageRequest,
  type?: SegmentType,
): Promise<Page<SegmentView>> {
  const where = `s.workspace_id = $1 ${type ? "AND s.type = $2" : ""}`;
  return selectPage(
    workspaceId,
    {
      select: `${SELECT_SEGMENT} WHERE ${where}`,
      orderBy: "s.created_at DESC, s.id DESC",
      countFrom: `FROM segments s WHERE ${where}`,
    },
    type ? [type] : [],
    page,
    view,
  );
}

export async function getSegment(
  workspaceId: WorkspaceId,
  id: string,
  transaction?: Transaction,
): Promise<SegmentView | null> {
  const [row] = await query<SegmentRow>(
    workspaceId,
    `${SELECT_SEGMENT} WHERE s.workspace_id = $1 AND s.id = $2`,
    [id],
    transaction,
  );
  return row ? view(row) : null;
}

/**
 * Validate a filter for saving as segment `selfId`: the language, then the
 * references (each segment must exist in this workspace) and cycles.
 */
export async function checkFilter(
  workspaceId: WorkspaceId,
  filter: unknown,
  selfId: string,
): Promise<FilterFacts> {
  const { issues, facts } = validateFilter(filter);
  if (issues.length) throw validationError(`Invalid filter: ${issues[0].field} ${issues[0].message}`, issues);
  if (facts.segmentRefs.length === 0) return facts;
  const rows = await query<{ id: string; depends_on: string[] }>(
    workspaceId,
    `SELECT id, depends_on FROM segments WHERE workspace_id = $1`,
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

export interface SegmentInput {
  name: string;
  description?: string | null;
  type: SegmentType;
  filter?: FilterGroup;
}

export async function insertSegment(
  workspaceId: WorkspaceId,
  id: string,
  input: SegmentInput,
  facts: FilterFacts | null,
  computing: boolean,
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO segments (id, workspace_id, name, description, type, filter, depends_on, event_types, uses_score, computing,
                           time_relative, next_refresh_at)
     VALUES ($2, $1, $3, $4, $5, $6::jsonb, $7::text[], $8::text[], $9, $10,
             $11, CASE WHEN $11 THEN now() + make_interval(secs => $12::double precision / 1000) END)`,
    [
      id,
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
  );
}

export async function updateSegmentRow(
  workspaceId: WorkspaceId,
  id: string,
  changes: {
    name?: string;
    description?: string | null;
    filter?: FilterGroup;
    facts?: FilterFacts;
    computing?: boolean;
  },
): Promise<void> {
  const sets: string[] = ["updated_at = now()"];
  const bind = Binds.inWorkspace([id]);
  if (changes.name !== undefined) sets.push(`name = ${bind.p(changes.name)}`);
  if (changes.description !== undefined) sets.push(`description = ${bind.p(changes.description)}`);
  if (changes.filter !== undefined && changes.facts) {
    sets.push(`filter = ${bind.p(JSON.stringify(changes.filter))}::jsonb`);
    sets.push(`depends_on = ${bind.p(changes.facts.segmentIds)}::text[]`);
    sets.push(`event_types = ${bind.p(changes.facts.eventTypes)}::text[]`);
    sets.push(`uses_score = ${bind.p(changes.facts.usesScore)}`);
    const timeRelative = `${bind.p(changes.facts.timeRelative)}::boolean`;
    sets.push(`time_relative = ${timeRelative}`);
    // Computed now, so the first time-driven refresh is one period away.
    sets.push(
      `next_refresh_at = CASE WHEN ${timeRelative} THEN now() + make_interval(secs => ${bind.p(config().segmentTimeRefreshMs)}::double precision / 1000) END`,
    );
  }
  if (changes.computing !== undefined) sets.push(`computing = ${bind.p(changes.computing)}`);
  await query(
    workspaceId,
    `UPDATE segments SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2`,
    bind.values,
  );
}

export async function setComputing(segmentId: string, computing: boolean): Promise<void> {
  await queryAcrossWorkspaces(`UPDATE segments SET computing = $2 WHERE id = $1`, [segmentId, computing]);
}

/**
 * Claim up to `limit` time-relative dynamic segments whose refresh is due, across workspaces:
 * their `next_refresh_at` moves one period ahead in the same statement, and rows another
 * replica is claiming are skipped, so two replicas never refresh the same segment at once.
 */
export async function claimTimeRefresh(
  limit: number,
  periodMs: number,
): Promise<Array<{ id: string; workspaceId: WorkspaceId }>> {
  return queryAcrossWorkspaces<{ id: string; workspaceId: WorkspaceId }>(
    `UPDATE segments s SET next_refresh_at = now() + make_interval(secs => $2::double precision / 1000)
       FROM (SELECT id FROM segments
              WHERE time_relative AND type = 'dynamic' AND NOT computing AND next_refresh_at <= now()
              ORDER BY next_refresh_at LIMIT $1 FOR UPDATE SKIP LOCKED) due
      WHERE s.id = due.id
      RETURNING s.id, s.workspace_id AS "workspaceId"`,
    [limit, periodMs],
  );
}

/** Time-relative dynamic segments across workspaces as a queue (lib/queue-stats.ts), due at their next refresh. */
export async function timeRefreshQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("next_refresh_at <= now()", "next_refresh_at")} FROM segments
      WHERE time_relative AND type = 'dynamic' AND NOT computing`,
    [],
  );
  return queueFigures("segment_time_refresh", row);
}

/** Delete a segment; refused while another segment's filter references it. False: no such segment. */
export async function deleteSegment(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const users = await query<{ id: string; name: string }>(
    workspaceId,
    `SELECT id, name FROM segments WHERE workspace_id = $1 AND $2 = ANY(depends_on) AND id <> $2`,
    [id],
  );
  if (users.length)
    throw conflict(`The segment is used by the filter of segment '${users[0].name}' (${users[0].id})`);
  // Its members and log go with it (trigger segments_drop_members, migration 0020).
  const deleted = await query(
    workspaceId,
    `DELETE FROM segments WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return deleted.length > 0;
}

export const newSegmentId = newId;

/** How many segments' filters use this one (they follow its changes). */
export async function dependentCount(workspaceId: WorkspaceId, segmentId: string): Promise<number> {
  const [{ n }] = await query<{ n: string }>(
    workspaceId,
    `SELECT count(*) AS n FROM segments WHERE workspace_id = $1 AND $2 = ANY(depends_on)`,
    [segmentId],
  );
  return Number(n);
}
