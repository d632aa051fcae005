import { Readable, pipeline } from "node:stream";
import { CSV_FIELDS } from "./fields";
import { stringify } from "csv-stringify";
import { stringify as stringifySync } from "csv-stringify/sync";
import { pageRequest } from "../../lib/pagination";
import { found } from "../../lib/errors";
import { CONSENT_CHANNELS } from "../../lib/channels";
import { contactView, getContact, type ContactView } from "./contacts.repo";
import { exportKeys, rowsMatching, type ContactFilter } from "./contact-search.repo";
import { decodeAttributeCell } from "./csv-import";
import { listNotes, type NoteView } from "./notes.repo";
import { stageHistory, type StageChange } from "./stages.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Contacts as CSV, streamed: a header of field names, then one row per
 * contact in id order. `attributes` and `customFields` are flattened as
 * `attributes.<key>` / `customFields.<key>`, consent as `consent.<channel>`
 * holding the status (its source and time are the importer's own, like ids and
 * timestamps, so they are not columns); tags are `;`-separated. Cells are
 * written so that an import of the file gives the same contacts back.
 */

export const BASE_COLUMNS = ["id", ...CSV_FIELDS, "createdAt", "updatedAt"] as const;

/** Non-strings as JSON; a string that would read back as JSON is written as a JSON string. */
export function encodeAttributeCell(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") return JSON.stringify(value);
  return decodeAttributeCell(value) === value ? value : JSON.stringify(value);
}

export function encodeCustomCell(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (Array.isArray(value)) return JSON.stringify(value);
  return String(value);
}

export interface ExportColumns {
  attributes: string[];
  customFields: string[];
}

export function headerRow(columns: ExportColumns): string[] {
  return [
    ...BASE_COLUMNS,
    ...CONSENT_CHANNELS.map((ch) => `consent.${ch}`),
    ...columns.attributes.map((k) => `attributes.${k}`),
    ...columns.customFields.map((k) => `customFields.${k}`),
  ];
}

export function contactRow(c: ContactView, columns: ExportColumns): string[] {
  const base = BASE_COLUMNS.map((col) => {
    const value = c[col];
    if (col === "tags") return (value as string[]).join(";");
    return value === null || value === undefined ? "" : String(value);
  });
  return [
    ...base,
    ...CONSENT_CHANNELS.map((ch) => c.consent[ch].status),
    ...columns.attributes.map((k) => encodeAttributeCell(c.attributes[k])),
    ...columns.customFields.map((k) => encodeCustomCell(c.customFields[k])),
  ];
}

/** The attribute and custom field keys used by the matching contacts (plus every defined custom field). */
export async function exportColumns(workspaceId: WorkspaceId, filter: ContactFilter): Promise<ExportColumns> {
  const { attrs, custom, defs } = await exportKeys(workspaceId, filter);
  const customKeys = [...new Set([...defs.map((d) => d.key), ...custom.map((c) => c.key)])];
  return { attributes: attrs.map((a) => a.key), customFields: customKeys };
}

/** A readable CSV stream of the contacts matching `filter`. */
export async function exportCsv(workspaceId: WorkspaceId, filter: ContactFilter): Promise<Readable> {
  const columns = await exportColumns(workspaceId, filter);
  async function* records() {
    yield headerRow(columns);
    for await (const rows of rowsMatching(workspaceId, filter, 1000)) {
      for (const row of rows) yield contactRow(contactView(row), columns);
    }
  }
  // pipeline (not pipe): a failing query destroys the response stream instead of leaving it open.
  return pipeline(Readable.from(records()), stringify(), () => undefined);
}

export type ContactExport =
  | { format: "json"; body: { contact: ContactView; notes: NoteView[]; stageHistory: StageChange[] } }
  | { format: "csv"; body: string; filename: string };

/** One contact as a CSV row (the workspace export's columns for its keys) or as JSON with its notes and stage history. */
export async function exportContact(
  workspaceId: WorkspaceId,
  contactId: string,
  format: "csv" | "json",
): Promise<ContactExport> {
  const contact = found(await getContact(workspaceId, contactId), "Contact");
  if (format === "json") {
    const [notes, stages] = await Promise.all([
      listNotes(workspaceId, contact.id, pageRequest({ limit: 100 })),
      stageHistory(workspaceId, contact.id),
    ]);
    return { format, body: { contact, notes: notes.data, stageHistory: stages.history } };
  }
  const columns = {
    attributes: Object.keys(contact.attributes).sort(),
    customFields: Object.keys(contact.customFields).sort(),
  };
  const body = stringifySync([headerRow(columns), contactRow(contact, columns)]);
  return { format, body, filename: `contact-${contact.id}.csv` };
}
