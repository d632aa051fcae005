import { QueryTypes } from "sequelize";
import { newId } from "../../lib/crypto";
import { database } from "../../lib/database";
import type { EventListItem, EventRecord, RecordInput } from "./events.schemas";

interface EventRow {
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

interface EventListRow extends EventRow {
  c_id: string | null;
  c_email: string | null;
  c_first_name: string | null;
  c_last_name: string | null;
}

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

function toListItem(row: EventListRow): EventListItem {
  return {
    ...toEvent(row),
    contact: row.c_id ? { id: row.c_id, email: row.c_email, firstName: row.c_first_name, lastName: row.c_last_name } : null,
  };
}

const COLUMNS = "id, type, metadata, timestamp, contact_id, session_id, page_url, referrer, utm_source, utm_medium, utm_campaign";

/**
 * Store one event in one round trip. The contact must belong to the
 * workspace: the INSERT selects nothing otherwise, and the caller answers 404.
 */
export async function insertEvent(workspaceId: string, input: RecordInput): Promise<EventRecord | null> {
  const sequelize = await database();
  const rows = await sequelize.query<EventRow>(
    `INSERT INTO events (id, workspace_id, contact_id, type, metadata, session_id, page_url, referrer,
                         utm_source, utm_medium, utm_campaign, timestamp)
     SELECT :id, :workspaceId, :contactId, :type, CAST(:metadata AS jsonb), :sessionId, :pageUrl, :referrer,
            :utmSource, :utmMedium, :utmCampaign, COALESCE(CAST(:timestamp AS timestamptz), now())
     WHERE CAST(:contactId AS text) IS NULL
        OR EXISTS (SELECT 1 FROM contacts WHERE id = :contactId AND workspace_id = :workspaceId)
     RETURNING ${COLUMNS}`,
    {
      type: QueryTypes.SELECT,
      replacements: {
        id: newId(),
        workspaceId,
        contactId: input.contactId ?? null,
        type: input.type,
        metadata: JSON.stringify(input.metadata ?? {}),
        sessionId: input.sessionId ?? null,
        pageUrl: input.pageUrl ?? null,
        referrer: input.referrer ?? null,
        utmSource: input.utmSource ?? null,
        utmMedium: input.utmMedium ?? null,
        utmCampaign: input.utmCampaign ?? null,
        timestamp: input.timestamp ? input.timestamp.toISOString() : null,
      },
    },
  );
  return rows[0] ? toEvent(rows[0]) : null;
}

/** Newest first, with each event's contact summary from one joined query. */
export async function listEvents(
  workspaceId: string,
  filter: { contactId?: string; type?: string },
  limit: number,
): Promise<EventListItem[]> {
  const sequelize = await database();
  const where = ["e.workspace_id = :workspaceId"];
  if (filter.contactId) where.push("e.contact_id = :contactId");
  if (filter.type) where.push("e.type = :type");
  const rows = await sequelize.query<EventListRow>(
    `SELECT e.id, e.type, e.metadata, e.timestamp, e.contact_id, e.session_id, e.page_url, e.referrer,
            e.utm_source, e.utm_medium, e.utm_campaign,
            c.id AS c_id, c.email AS c_email, c.first_name AS c_first_name, c.last_name AS c_last_name
       FROM events e
       LEFT JOIN contacts c ON c.id = e.contact_id
      WHERE ${where.join(" AND ")}
      ORDER BY e.timestamp DESC, e.id DESC
      LIMIT :limit`,
    {
      type: QueryTypes.SELECT,
      replacements: { workspaceId, contactId: filter.contactId ?? null, type: filter.type ?? null, limit },
    },
  );
  return rows.map(toListItem);
}
