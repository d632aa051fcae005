import type { Transaction } from "sequelize";
import { deleteContactRow } from "./contacts.repo";
import { eraseRows, existingTables, rowsOf } from "./related.repo";

/** Where a contact's data lives beyond its row, for its GDPR export and erasure (gdpr.ts). */

const OPTIONAL = [
  "events",
  "messages",
  "short_link_clicks",
  "form_submissions",
  "score_history",
  "deals",
  "tasks",
  "segment_members",
  "contact_notes",
  "contact_stage_history",
];

/** The contact's rows in each of those tables, newest first (empty where a table does not exist yet). */
export async function contactRowsElsewhere(contactId: string) {
  const present = await existingTables(OPTIONAL);
  const [events, messages, linkClicks, notes, formSubmissions, scores, stageHistory, deals, tasks, segments] =
    await Promise.all([
      rowsOf("events", contactId, "t.timestamp DESC, t.id DESC", present),
      rowsOf("messages", contactId, "t.created_at DESC, t.id DESC", present),
      rowsOf("short_link_clicks", contactId, "t.last_at DESC", present),
      rowsOf("contact_notes", contactId, "t.created_at DESC, t.id DESC", present),
      rowsOf("form_submissions", contactId, "t.created_at DESC, t.id DESC", present),
      rowsOf("score_history", contactId, "t.created_at DESC, t.id DESC", present),
      rowsOf("contact_stage_history", contactId, "t.created_at DESC, t.id DESC", present),
      rowsOf("deals", contactId, "t.created_at DESC, t.id DESC", present),
      rowsOf("tasks", contactId, "t.created_at DESC, t.id DESC", present),
      rowsOf("segment_members", contactId, "t.entered_at DESC", present),
    ]);
  return {
    events,
    messages,
    linkClicks,
    notes,
    formSubmissions,
    scores,
    stageHistory,
    deals,
    tasks,
    segments,
  };
}

/** Tables whose rows about the contact are removed outright (others cascade or lose the link with the contact). */
const ERASE = ["events", "messages", "short_link_clicks", "form_submissions"];
/** Cleared after the contact row: its cascade to segment_members writes exits into this log. */
const ERASE_AFTER = ["segment_membership_log"];

/** Delete the contact's row and its rows in the erased tables, in the caller's transaction. */
export async function eraseContactEverywhere(
  workspaceId: string,
  contactId: string,
  transaction: Transaction,
): Promise<void> {
  const present = await existingTables([...ERASE, ...ERASE_AFTER], transaction);
  await eraseRows(ERASE, contactId, present, transaction);
  await deleteContactRow(workspaceId, contactId, transaction);
  await eraseRows(ERASE_AFTER, contactId, present, transaction);
}
