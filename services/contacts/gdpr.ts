import { database } from "../../lib/database";
import { found, notFound } from "../../lib/errors";
import { stageDomainEvents } from "../../lib/outbox";
import { contactView, deleteContactRow, getRow, lockContact, type ContactView } from "./contacts.repo";
import { contactFacts } from "./effects";
import { eraseRows, existingTables, rowsOf } from "./related.repo";

/** Everything held about one contact, and its erasure. */

export interface GdprExport {
  contact: ContactView;
  consent: ContactView["consent"];
  events: Array<Record<string, unknown>>;
  messages: Array<Record<string, unknown>>;
  linkClicks: Array<Record<string, unknown>>;
  notes: Array<Record<string, unknown>>;
  formSubmissions: Array<Record<string, unknown>>;
  scores: Array<Record<string, unknown>>;
  stageHistory: Array<Record<string, unknown>>;
  deals: Array<Record<string, unknown>>;
  tasks: Array<Record<string, unknown>>;
  segments: Array<Record<string, unknown>>;
}

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

/** snake_case keys of a generic row → camelCase, as the API speaks. */
export function camelRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row))
    out[k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())] = v;
  return out;
}

export async function gdprExport(workspaceId: string, contactId: string): Promise<GdprExport> {
  const contact = contactView(found(await getRow(workspaceId, contactId), "Contact"));
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
  const strip = (rows: Array<Record<string, unknown>>) =>
    rows.map((r) => {
      const rest = { ...r };
      delete rest.workspace_id;
      return camelRow(rest);
    });
  return {
    contact,
    consent: contact.consent,
    events: strip(events),
    messages: strip(messages),
    linkClicks: strip(linkClicks),
    notes: strip(notes),
    formSubmissions: strip(formSubmissions),
    scores: strip(scores),
    stageHistory: strip(stageHistory),
    deals: strip(deals),
    tasks: strip(tasks),
    segments: strip(segments),
  };
}

/** Tables whose rows about the contact are removed outright (others cascade or lose the link with the contact). */
const ERASE = ["events", "messages", "short_link_clicks", "form_submissions"];
/** Cleared after the contact row: its cascade to segment_members writes exits into this log. */
const ERASE_AFTER = ["segment_membership_log"];

/**
 * Erase the contact: its events, messages, form submissions and segment
 * membership log go, the contact row goes (notes, scores, stage history, memberships and
 * link tokens cascade; deals and tasks keep their business data without the
 * link). The do-not-contact list is kept: it is what stops further messages.
 * Its `contact.deleted` fact is staged in the same transaction.
 */
export async function gdprDelete(
  workspaceId: string,
  contactId: string,
): Promise<{ id: string; email: string | null }> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const locked = await lockContact(workspaceId, contactId, transaction);
    if (!locked) throw notFound("Contact");
    const present = await existingTables([...ERASE, ...ERASE_AFTER], transaction);
    await eraseRows(ERASE, contactId, present, transaction);
    await deleteContactRow(workspaceId, contactId, transaction);
    await eraseRows(ERASE_AFTER, contactId, present, transaction);
    await stageDomainEvents(transaction, workspaceId, contactFacts({ deleted: [locked] }));
    return locked;
  });
}
