import { newId } from "../../lib/crypto";
import { query, uniqueViolation } from "../../lib/database";
import { conflict, fieldError, notFound } from "../../lib/errors";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { normalizeEmail, normalizePhone, PHONE_FORMAT_MESSAGE } from "./normalize";
import type { WorkspaceId } from "../../lib/tenancy";

/** Do-not-contact list: emails and phones (stored normalised) that no send may reach. */

export interface DncEntry {
  id: string;
  type: "email" | "phone";
  value: string;
  reason: string | null;
  createdBy: string | null;
  createdAt: string;
}

interface DncRow {
  id: string;
  type: "email" | "phone";
  value: string;
  reason: string | null;
  created_by: string | null;
  created_at: Date;
}

const view = (r: DncRow): DncEntry => ({
  id: r.id,
  type: r.type,
  value: r.value,
  reason: r.reason,
  createdBy: r.created_by,
  createdAt: new Date(r.created_at).toISOString(),
});

/** The stored form of a value, or a 400 naming `value`. */
export function normalizeDncValue(type: "email" | "phone", value: string): string {
  const normalized = type === "email" ? normalizeEmail(value) : normalizePhone(value);
  if (!normalized)
    throw fieldError("value", type === "email" ? "must be a valid email address" : PHONE_FORMAT_MESSAGE);
  return normalized;
}

export async function listDnc(
  workspaceId: WorkspaceId,
  type: string | undefined,
  page: PageRequest,
): Promise<Page<DncEntry>> {
  const where = type ? "workspace_id = $1 AND type = $2" : "workspace_id = $1";
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM dnc_entries WHERE ${where}`, orderBy: "created_at DESC, id DESC" },
    type ? [type] : [],
    page,
    view,
  );
}

export async function addDnc(
  workspaceId: WorkspaceId,
  type: "email" | "phone",
  value: string,
  reason: string | null,
  createdBy: string | null,
): Promise<DncEntry> {
  try {
    const rows = await query<DncRow>(
      workspaceId,
      `INSERT INTO dnc_entries (id, workspace_id, type, value, reason, created_by) VALUES ($2, $1, $3, $4, $5, $6) RETURNING *`,
      [newId(), type, normalizeDncValue(type, value), reason, createdBy],
    );
    return view(rows[0]);
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`This ${type} is already on the do-not-contact list`);
    throw err;
  }
}

export async function removeDnc(
  workspaceId: WorkspaceId,
  type: "email" | "phone",
  value: string,
): Promise<void> {
  const rows = await query(
    workspaceId,
    `DELETE FROM dnc_entries WHERE workspace_id = $1 AND type = $2 AND value = $3 RETURNING id`,
    [type, normalizeDncValue(type, value)],
  );
  if (!rows.length) throw notFound("Do-not-contact entry");
}

/** Which of these emails/phones are on the list (senders call this before every send). Values are normalised first. */
export async function blockedValues(
  workspaceId: WorkspaceId,
  emails: string[],
  phones: string[],
): Promise<string[]> {
  const values = [
    ...emails.map((e) => ["email", normalizeEmail(e)] as const),
    ...phones.map((p) => ["phone", normalizePhone(p)] as const),
  ].filter((v): v is readonly ["email" | "phone", string] => v[1] !== null);
  if (!values.length) return [];
  const rows = await query<{ value: string }>(
    workspaceId,
    `SELECT d.value FROM dnc_entries d JOIN unnest($2::text[], $3::text[]) AS v(type, value)
        ON d.type = v.type AND d.value = v.value
      WHERE d.workspace_id = $1`,
    [values.map((v) => v[0]), values.map((v) => v[1])],
  );
  return rows.map((r) => r.value);
}

/** Do-not-contact reasons of the given addresses (normalised value → reason, `bounce` for a hard bounce). */
export async function dncReasons(
  workspaceId: WorkspaceId,
  addresses: Array<{ type: "email" | "phone"; value: string }>,
): Promise<Array<{ type: "email" | "phone"; value: string; reason: string | null }>> {
  const values = addresses
    .map((a) => ({
      type: a.type,
      value: a.type === "email" ? normalizeEmail(a.value) : normalizePhone(a.value),
    }))
    .filter((a): a is { type: "email" | "phone"; value: string } => a.value !== null);
  if (!values.length) return [];
  return query<{ type: "email" | "phone"; value: string; reason: string | null }>(
    workspaceId,
    `SELECT d.type, d.value, d.reason FROM dnc_entries d JOIN unnest($2::text[], $3::text[]) AS v(type, value)
        ON d.type = v.type AND d.value = v.value
      WHERE d.workspace_id = $1`,
    [values.map((v) => v.type), values.map((v) => v.value)],
  );
}
