import { QueryTypes } from "sequelize";
import { newId } from "../../lib/crypto";
import { database, uniqueViolation } from "../../lib/database";
import { conflict, fieldError, notFound } from "../../lib/errors";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { normalizeEmail, normalizePhone, PHONE_FORMAT_MESSAGE } from "./normalize";

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
  workspaceId: string,
  type: string | undefined,
  page: PageRequest,
): Promise<Page<DncEntry>> {
  const where = type ? "workspace_id = $1 AND type = $2" : "workspace_id = $1";
  const bind = type ? [workspaceId, type] : [workspaceId];
  return selectPage(
    { select: `SELECT * FROM dnc_entries WHERE ${where}`, orderBy: "created_at DESC, id DESC" },
    bind,
    page,
    view,
  );
}

export async function addDnc(
  workspaceId: string,
  type: "email" | "phone",
  value: string,
  reason: string | null,
  createdBy: string | null,
): Promise<DncEntry> {
  const sequelize = await database();
  try {
    const rows = await sequelize.query<DncRow>(
      `INSERT INTO dnc_entries (id, workspace_id, type, value, reason, created_by) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
      {
        bind: [newId(), workspaceId, type, normalizeDncValue(type, value), reason, createdBy],
        type: QueryTypes.SELECT,
      },
    );
    return view(rows[0]);
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`This ${type} is already on the do-not-contact list`);
    throw err;
  }
}

export async function removeDnc(workspaceId: string, type: "email" | "phone", value: string): Promise<void> {
  const sequelize = await database();
  const rows = await sequelize.query(
    `DELETE FROM dnc_entries WHERE workspace_id = $1 AND type = $2 AND value = $3 RETURNING id`,
    { bind: [workspaceId, type, normalizeDncValue(type, value)], type: QueryTypes.SELECT },
  );
  if (!rows.length) throw notFound("Do-not-contact entry");
}

/** Which of these emails/phones are on the list (senders call this before every send). Values are normalised first. */
export async function blockedValues(
  workspaceId: string,
  emails: string[],
  phones: string[],
): Promise<string[]> {
  const values = [
    ...emails.map((e) => ["email", normalizeEmail(e)] as const),
    ...phones.map((p) => ["phone", normalizePhone(p)] as const),
  ].filter((v): v is readonly ["email" | "phone", string] => v[1] !== null);
  if (!values.length) return [];
  const sequelize = await database();
  const rows = await sequelize.query<{ value: string }>(
    `SELECT d.value FROM dnc_entries d JOIN unnest($2::text[], $3::text[]) AS v(type, value)
        ON d.type = v.type AND d.value = v.value
      WHERE d.workspace_id = $1`,
    { bind: [workspaceId, values.map((v) => v[0]), values.map((v) => v[1])], type: QueryTypes.SELECT },
  );
  return rows.map((r) => r.value);
}

/** Do-not-contact reasons of the given addresses (normalised value → reason, `bounce` for a hard bounce). */
export async function dncReasons(
  workspaceId: string,
  addresses: Array<{ type: "email" | "phone"; value: string }>,
): Promise<Array<{ type: "email" | "phone"; value: string; reason: string | null }>> {
  const values = addresses
    .map((a) => ({
      type: a.type,
      value: a.type === "email" ? normalizeEmail(a.value) : normalizePhone(a.value),
    }))
    .filter((a): a is { type: "email" | "phone"; value: string } => a.value !== null);
  if (!values.length) return [];
  const sequelize = await database();
  return sequelize.query<{ type: "email" | "phone"; value: string; reason: string | null }>(
    `SELECT d.type, d.value, d.reason FROM dnc_entries d JOIN unnest($2::text[], $3::text[]) AS v(type, value)
        ON d.type = v.type AND d.value = v.value
      WHERE d.workspace_id = $1`,
    { bind: [workspaceId, values.map((v) => v.type), values.map((v) => v.value)], type: QueryTypes.SELECT },
  );
}
