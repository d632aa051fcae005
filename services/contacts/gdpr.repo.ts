import type { Transaction } from "sequelize";
import { isoTimeColumns, query } from "../../lib/database";
import { deleteContactRow } from "./contacts.repo";
import { eraseRows, existingTables, rowsOf } from "./related.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Where a contact's data lives beyond its row, for its GDPR export and erasure (gdpr.ts). */

/** Each section of the export: its table and the order of its rows (newest first). */
const SECTIONS = {
  events: ["events", "t.timestamp DESC, t.id DESC"],
  messages: ["messages", "t.created_at DESC, t.id DESC"],
  linkClicks: ["short_link_clicks", "t.last_at DESC"],
  notes: ["contact_notes", "t.created_at DESC, t.id DESC"],
  formSubmissions: ["form_submissions", "t.created_at DESC, t.id DESC"],
  scores: ["score_history", "t.created_at DESC, t.id DESC"],
  stageHistory: ["contact_stage_history", "t.created_at DESC, t.id DESC"],
  deals: ["deals", "t.created_at DESC, t.id DESC"],
  tasks: ["tasks", "t.created_at DESC, t.id DESC"],
  segments: ["segment_members", "t.entered_at DESC"],
} as const;

export type ContactSection = keyof typeof SECTIONS;
export type ContactRows = Record<ContactSection, Array<Record<string, unknown>>>;

/** The contact's rows in each section's table (empty where a table does not exist yet). */
export async function contactRowsElsewhere(contactId: string): Promise<ContactRows> {
  const sections = Object.entries(SECTIONS) as Array<[ContactSection, (typeof SECTIONS)[ContactSection]]>;
  const present = await existingTables(sections.map(([, [table]]) => table));
  const rows = await Promise.all(
    sections.map(async ([section, [table, order]]) => [
      section,
      await rowsOf(table, contactId, order, present),
    ]),
  );
  return Object.fromEntries(rows) as ContactRows;
}

/** The contact's inbox conversations, newest first, each with its messages oldest first (rows as stored, snake_case). */
export async function conversationsOf(
  workspaceId: WorkspaceId,
  contactId: string,
): Promise<Array<Record<string, unknown> & { messages: Array<Record<string, unknown>> }>> {
  const rows = await query<{
    thread: Record<string, unknown>;
    messages: Array<Record<string, unknown>>;
  }>(
    workspaceId,
    `SELECT to_jsonb(t) - 'workspace_id' AS thread,
            coalesce((SELECT jsonb_agg(to_jsonb(m) - 'workspace_id' - 'thread_id' ORDER BY m.created_at, m.id)
                        FROM inbox_messages m WHERE m.workspace_id = $1 AND m.thread_id = t.id), '[]'::jsonb) AS messages
       FROM inbox_threads t
      WHERE t.workspace_id = $1 AND t.contact_id = $2
      ORDER BY t.last_message_at DESC, t.id DESC`,
    [contactId],
  );
  return rows.map((r) => ({ ...isoTimeColumns(r.thread), messages: r.messages.map(isoTimeColumns) }));
}

/** Tables whose rows about the contact are removed outright (others cascade or lose the link with the contact). */
const ERASE = ["events", "messages", "short_link_clicks", "form_submissions"];
/** Cleared after the contact row: its cascade to segment_members writes exits into this log. */
const ERASE_AFTER = ["segment_membership_log"];

/** Delete the contact's row and its rows in the erased tables, in the caller's transaction. */
export async function eraseContactEverywhere(
  workspaceId: WorkspaceId,
  contactId: string,
  transaction: Transaction,
): Promise<void> {
  const present = await existingTables([...ERASE, ...ERASE_AFTER], transaction);
  await eraseRows(ERASE, contactId, present, transaction);
  await deleteContactRow(workspaceId, contactId, transaction);
  await eraseRows(ERASE_AFTER, contactId, present, transaction);
}
