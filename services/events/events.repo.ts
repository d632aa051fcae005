import { MicroBatcher } from "../../lib/batcher";
import { newId } from "../../lib/crypto";
import { Binds, isoTimeSql, query, queryAcrossWorkspacesPrepared, queryPrepared } from "../../lib/database";
import { wakeOutboxRelays } from "../../lib/outbox";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { retentionPurge } from "../../lib/retention";
import type { ActivityItem, EventListItem, EventRecord, RecordInput } from "./events.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

export interface EventRow {
  id: string;
  type: string;
  metadata: Record<string, unknown>;
  timestamp: Date;
  contact_id: string | null;
  session_id: string | null;
  page_url: string | null;
  referrer: string | null;
  utm_source: string | null;
  utm_medium: string | null;
  utm_campaign: string | null;
}

type EventListRow = EventRow & ContactColumns;

export function toEvent(row: EventRow): EventRecord {
  return {
    id: row.id,
    type: row.type,
    metadata: row.metadata ?? {},
    timestamp: new Date(row.timestamp).toISOString(),
    contactId: row.contact_id,
    sessionId: row.session_id,
    pageUrl: row.page_url,
    referrer: row.referrer,
    utmSource: row.utm_source,
    utmMedium: row.utm_medium,
    utmCampaign: row.utm_campaign,
  };
}

interface ContactColumns {
  c_id: string | null;
  c_email: string | null;
  c_first_name: string | null;
  c_last_name: string | null;
}

const contactSummary = (row: ContactColumns) =>
  row.c_id
    ? { id: row.c_id, email: row.c_email, firstName: row.c_first_name, lastName: row.c_last_name }
    : null;

function toListItem(row: EventListRow): EventListItem {
  return { ...toEvent(row), contact: contactSummary(row) };
}

const COLUMNS =
  "id, type, metadata, timestamp, contact_id, session_id, page_url, referrer, utm_source, utm_medium, utm_campaign";

/**
 * The fact of an activity event (webhooks subscribed to e.g. `purchase` get
 * it), built from the stored row so it is staged by the insert itself.
 */
const ACTIVITY_FACT = `jsonb_build_object(
  'eventId', id, 'contactId', contact_id, 'type', type, 'metadata', metadata,
  'timestamp', ${isoTimeSql("timestamp")},
  'sessionId', session_id, 'pageUrl', page_url, 'referrer', referrer,
  'utmSource', utm_source, 'utmMedium', utm_medium, 'utmCampaign', utm_campaign)`;

/**
 * Store events, many per statement under load (lib/batcher.ts): one commit for
 * a whole batch. The same statement stages each event's fact in the outbox
 * (lib/outbox.ts), so no stored event misses its fact and no extra round trip
 * is paid. An event that names its own fact (`fact`) stages that as the
 * delivery's data instead of the activity shape. A contact must belong to the event's workspace: its row is not
 * inserted otherwise, and that caller answers 404. An event with its caller's own `id` already stored is not stored
 * again (null: `storedEvents` tells it from a foreign contact).
 */
async function insertEvents(
  items: Array<{ workspaceId: WorkspaceId; input: RecordInput }>,
): Promise<Array<EventRecord | null>> {
  const ids = items.map((it) => it.input.id ?? newId());
  const col = (pick: (it: { workspaceId: WorkspaceId; input: RecordInput }) => string | null | undefined) =>
    items.map((it) => pick(it) ?? null);
  const rows = await queryAcrossWorkspacesPrepared<EventRow>(
    `WITH stored AS (
     INSERT INTO events (id, workspace_id, contact_id, type, metadata, session_id, page_url, referrer,
                         utm_source, utm_medium, utm_campaign, timestamp)
     SELECT v.id, v.workspace_id, v.contact_id, v.type, CAST(v.metadata AS jsonb), v.session_id, v.page_url, v.referrer,
            v.utm_source, v.utm_medium, v.utm_campaign, COALESCE(CAST(v.ts AS timestamptz), clock_timestamp())
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                   $9::text[], $10::text[], $11::text[], $12::text[])
            AS v(id, workspace_id, contact_id, type, metadata, session_id, page_url, referrer,
                 utm_source, utm_medium, utm_campaign, ts)
      WHERE v.contact_id IS NULL
         -- OFFSET 0 keeps this a probe of the primary key per event, never a hash of the contacts table.
         OR EXISTS (SELECT 1 FROM contacts c WHERE c.id = v.contact_id AND c.workspace_id = v.workspace_id OFFSET 0)
     ON CONFLICT (id) DO NOTHING
     RETURNING workspace_id, ${COLUMNS}),
     staged AS (INSERT INTO domain_event_outbox (workspace_id, type, data)
                SELECT workspace_id, type, COALESCE(CAST(f.fact AS jsonb), ${ACTIVITY_FACT})
                  FROM stored JOIN unnest($1::text[], $13::text[]) AS f(fact_id, fact) ON f.fact_id = stored.id)
     SELECT ${COLUMNS} FROM stored`,
    [
      ids,
      col((it) => it.workspaceId),
      col((it) => it.input.contactId),
      col((it) => it.input.type),
      col((it) => JSON.stringify(it.input.metadata ?? {})),
      col((it) => it.input.sessionId),
      col((it) => it.input.pageUrl),
      col((it) => it.input.referrer),
      col((it) => it.input.utmSource),
      col((it) => it.input.utmMedium),
      col((it) => it.input.utmCampaign),
      col((it) => it.input.timestamp),
      col((it) => (it.input.fact ? JSON.stringify(it.input.fact) : null)),
    ],
  );
  if (rows.length) wakeOutboxRelays();
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => {
    const row = byId.get(id);
    return row ? toEvent(row) : null;
  });
}

const eventWriter = new MicroBatcher(insertEvents, { maxBatch: 200, lanes: 1 });

/** Store one event; null when its contact is not in the workspace. */
export function insertEvent(workspaceId: WorkspaceId, input: RecordInput): Promise<EventRecord | null> {
  return eventWriter.add({ workspaceId, input });
}

/** Store a batch of one workspace's events in one statement; null for each whose contact is not in the workspace. */
export function insertEventBatch(
  workspaceId: WorkspaceId,
  inputs: RecordInput[],
): Promise<Array<EventRecord | null>> {
  return insertEvents(inputs.map((input) => ({ workspaceId, input })));
}

/** The workspace's events of these ids that are stored (an internal caller's own ids recorded again). */
export async function storedEvents(workspaceId: WorkspaceId, ids: string[]): Promise<EventRecord[]> {
  const rows = await query<EventRow>(
    workspaceId,
    `SELECT ${COLUMNS} FROM events WHERE workspace_id = $1 AND id = ANY($2::text[])`,
    [ids],
  );
  return rows.map(toEvent);
}

/** Newest first, with each event's contact summary from one joined query. */
export async function listEvents(
  workspaceId: WorkspaceId,
  filter: { contactId?: string; type?: string },
  limit: number,
): Promise<EventListItem[]> {
  const binds = Binds.inWorkspace();
  const where = ["e.workspace_id = $1"];
  if (filter.contactId) where.push(`e.contact_id = ${binds.p(filter.contactId)}`);
  if (filter.type) where.push(`e.type = ${binds.p(filter.type)}`);
  const rows = await query<EventListRow>(
    workspaceId,
    `SELECT e.id, e.type, e.metadata, e.timestamp, e.contact_id, e.session_id, e.page_url, e.referrer,
            e.utm_source, e.utm_medium, e.utm_campaign,
            c.id AS c_id, c.email AS c_email, c.first_name AS c_first_name, c.last_name AS c_last_name
       FROM events e
       LEFT JOIN contacts c ON c.id = e.contact_id
      WHERE ${where.join(" AND ")}
      ORDER BY e.timestamp DESC, e.id DESC
      LIMIT ${binds.p(limit)}`,
    binds.values,
  );
  return rows.map(toListItem);
}

export interface ActivityFilter {
  type?: string;
  contactId?: string;
  from?: Date;
  to?: Date;
}

/** The workspace's activity feed: recorded events newest first, each with its contact, one page and the total. */
export async function activityFeed(
  workspaceId: WorkspaceId,
  filter: ActivityFilter,
  page: PageRequest,
): Promise<Page<ActivityItem>> {
  const binds = Binds.inWorkspace();
  const where = ["e.workspace_id = $1"];
  if (filter.type) where.push(`e.type = ${binds.p(filter.type)}`);
  if (filter.contactId) where.push(`e.contact_id = ${binds.p(filter.contactId)}`);
  if (filter.from) where.push(`e.timestamp >= ${binds.p(filter.from)}`);
  // Inclusive to the millisecond the API writes (a stored time has microseconds).
  if (filter.to) where.push(`e.timestamp < ${binds.p(filter.to)}::timestamptz + interval '1 millisecond'`);
  return selectPage(
    workspaceId,
    {
      select: `SELECT e.id, e.type, e.metadata, e.timestamp, e.contact_id,
                      c.id AS c_id, c.email AS c_email, c.first_name AS c_first_name, c.last_name AS c_last_name
                 FROM events e
                 LEFT JOIN contacts c ON c.id = e.contact_id
                WHERE ${where.join(" AND ")}`,
      orderBy: "e.timestamp DESC, e.id DESC",
      countFrom: `FROM events e WHERE ${where.join(" AND ")}`,
    },
    binds.values,
    page,
    (row: Pick<EventRow, "id" | "type" | "metadata" | "timestamp" | "contact_id"> & ContactColumns) => ({
      id: row.id,
      type: row.type,
      contactId: row.contact_id,
      contact: contactSummary(row),
      metadata: row.metadata ?? {},
      occurredAt: new Date(row.timestamp).toISOString(),
    }),
  );
}

/** A visitor identified: the anonymous events of its session become the contact's; answers how many. */
export async function claimSession(
  workspaceId: WorkspaceId,
  sessionId: string,
  contactId: string,
): Promise<number> {
  const rows = await queryPrepared<{ id: string }>(
    workspaceId,
    `UPDATE events SET contact_id = $3
      WHERE workspace_id = $1 AND session_id = $2 AND contact_id IS NULL
        AND EXISTS (SELECT 1 FROM contacts c WHERE c.id = $3 AND c.workspace_id = $1)
     RETURNING id`,
    [sessionId, contactId],
  );
  return rows.length;
}

/**
 * Retention: the workspace's events whose own `timestamp` is before `before`,
 * counted and deleted in batches oldest first (lib/retention.ts).
 */
export const { countBefore, deleteBefore } = retentionPurge(
  { table: "events", timeColumn: "timestamp" },
  queryPrepared,
);
