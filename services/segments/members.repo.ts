import { query, queryAcrossWorkspaces } from "../../lib/database";
import { validationError } from "../../lib/errors";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { type SegmentView } from "./segments.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Queries of a segment's members: static membership, the members page, growth from the membership log. */

/** A page of a segment's member ids in id order, after `after` (keyset: a member entering or leaving moves no page). */
export async function memberIdsPage(
  workspaceId: WorkspaceId,
  segmentId: string,
  after: string,
  limit: number,
): Promise<string[]> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `SELECT sm.contact_id AS id FROM segment_members sm JOIN contacts c ON c.id = sm.contact_id
      WHERE sm.segment_id = $2 AND c.workspace_id = $1 AND sm.contact_id > $3
      ORDER BY sm.contact_id LIMIT $4`,
    [segmentId, after, limit],
  );
  return rows.map((r) => r.id);
}

/** Which of `segmentIds` (of the workspace) the contact is a member of now. */
export async function memberOf(
  workspaceId: WorkspaceId,
  contactId: string,
  segmentIds: string[],
): Promise<string[]> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `SELECT s.id FROM segments s JOIN segment_members sm ON sm.segment_id = s.id
      WHERE s.workspace_id = $1 AND sm.contact_id = $2 AND s.id = ANY($3::text[])`,
    [contactId, segmentIds],
  );
  return rows.map((r) => r.id);
}

export interface MemberSummary {
  id: string;
  email: string | null;
  firstName: string | null;
  lastName: string | null;
  enteredAt: Date;
}

export async function listMembers(
  workspaceId: WorkspaceId,
  segmentId: string,
  page: PageRequest,
): Promise<Page<MemberSummary>> {
  return selectPage(
    workspaceId,
    {
      select: `SELECT c.id, c.email, c.first_name, c.last_name, sm.entered_at
                 FROM segment_members sm JOIN contacts c ON c.id = sm.contact_id
                WHERE sm.segment_id = $2 AND c.workspace_id = $1`,
      orderBy: "sm.entered_at DESC, sm.contact_id DESC",
      countFrom:
        "FROM segment_members sm JOIN segments s ON s.id = sm.segment_id WHERE sm.segment_id = $2 AND s.workspace_id = $1",
    },
    [segmentId],
    page,
    (r: { id: string; email: string; first_name: string; last_name: string; entered_at: Date }) => ({
      id: r.id,
      email: r.email,
      firstName: r.first_name,
      lastName: r.last_name,
      enteredAt: r.entered_at,
    }),
  );
}

/** Every id must be a contact of this workspace; 400 naming the bad entries otherwise. */
export async function assertContacts(workspaceId: WorkspaceId, contactIds: string[]): Promise<void> {
  const found = await query<{ id: string }>(
    workspaceId,
    `SELECT id FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[])`,
    [[...new Set(contactIds)]],
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
  workspaceId: WorkspaceId,
  segmentId: string,
  contactIds: string[],
): Promise<number> {
  await assertContacts(workspaceId, contactIds);
  const inserted = await queryAcrossWorkspaces(
    `INSERT INTO segment_members (segment_id, contact_id, entered_at) SELECT $1, id, now() FROM unnest($2::text[]) AS id
     ON CONFLICT DO NOTHING RETURNING contact_id`,
    [segmentId, [...new Set(contactIds)]],
  );
  return inserted.length;
}

/** The segment is one of the workspace's (the caller found it); answers how many were members. */
export async function removeStaticMembers(segmentId: string, contactIds: string[]): Promise<number> {
  const removed = await queryAcrossWorkspaces(
    `DELETE FROM segment_members WHERE segment_id = $1 AND contact_id = ANY($2::text[]) RETURNING contact_id`,
    [segmentId, [...new Set(contactIds)]],
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
  const rows = await queryAcrossWorkspaces<{
    day: string;
    entered: string;
    exited: string;
    member_count: string;
  }>(
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
    [segmentId, range.from.toISOString(), range.to.toISOString()],
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
