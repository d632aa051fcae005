import { isoTimeColumns, isoTimeSql } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { found } from "../../lib/errors";
import { getRow } from "./contacts.repo";
import { existingTables } from "./related.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * One contact's history, newest first: events, notes, stage changes, and
 * messages and form submissions once those areas exist.
 */

export interface TimelineItem {
  kind: "event" | "note" | "stage_change" | "message" | "form_submission";
  id: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export async function timeline(
  workspaceId: WorkspaceId,
  contactId: string,
  page: PageRequest,
): Promise<Page<TimelineItem>> {
  found(await getRow(workspaceId, contactId), "Contact");
  const present = await existingTables(["events", "messages", "form_submissions"]);
  const parts = [
    `SELECT 'note' AS kind, id, created_at AS at,
            jsonb_build_object('body', body, 'authorType', author_type, 'authorId', author_id) AS data
       FROM contact_notes WHERE workspace_id = $1 AND contact_id = $2`,
    `SELECT 'stage_change', id, created_at,
            jsonb_build_object('from', from_stage, 'to', to_stage, 'reason', reason, 'changedByType', changed_by_type, 'changedById', changed_by_id)
       FROM contact_stage_history WHERE workspace_id = $1 AND contact_id = $2`,
  ];
  if (present.has("events")) {
    parts.push(`SELECT 'event', id, timestamp,
            jsonb_build_object('type', type, 'metadata', metadata, 'sessionId', session_id, 'pageUrl', page_url, 'referrer', referrer,
                               'utmSource', utm_source, 'utmMedium', utm_medium, 'utmCampaign', utm_campaign)
       FROM events WHERE workspace_id = $1 AND contact_id = $2`);
  }
  if (present.has("messages"))
    parts.push(`SELECT 'message', m.id, m.created_at,
            jsonb_build_object('messageId', m.id, 'channel', m.channel, 'status', m.status, 'reason', m.reason, 'to', m.to_address,
                               'templateId', m.template_id, 'campaignId', m.campaign_id, 'variant', m.variant,
                               'sentAt', ${isoTimeSql("m.sent_at")}, 'openedAt', ${isoTimeSql("m.opened_at")},
                               'clickedAt', ${isoTimeSql("m.clicked_at")})
       FROM messages m WHERE m.workspace_id = $1 AND m.contact_id = $2`);
  // Tables of areas still to come are read generically (every column but the workspace).
  if (present.has("form_submissions")) {
    parts.push(
      `SELECT 'form_submission', f.id, f.created_at, to_jsonb(f) - 'workspace_id' - 'contact_id' FROM form_submissions f WHERE f.workspace_id = $1 AND f.contact_id = $2`,
    );
  }
  const union = parts.join("\nUNION ALL\n");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM (${union}) t`, orderBy: "at DESC, id DESC", countFrom: `FROM (${union}) t` },
    [contactId],
    page,
    (r: { kind: TimelineItem["kind"]; id: string; at: Date; data: Record<string, unknown> }) => ({
      kind: r.kind,
      id: r.id,
      timestamp: new Date(r.at).toISOString(),
      // A submission is its whole row as jsonb; the other kinds format their times in SQL.
      data: r.kind === "form_submission" ? isoTimeColumns(r.data) : r.data,
    }),
  );
}
