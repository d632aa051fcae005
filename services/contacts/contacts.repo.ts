import { QueryTypes, type Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { Binds, database, likeEscape, queryPrepared, uniqueViolation } from "../../lib/database";
import { conflict, validationError } from "../../lib/errors";
import { pageOf, sortOrder, type Page, type PageRequest } from "../../lib/pagination";
import type { ConsentEntry } from "../../models";
import type { CustomFieldDef } from "./custom-fields";
import { normalizeEmail, normalizePhone } from "./normalize";
import {
  COLUMNS,
  fieldsOfKind,
  valuesOf,
  type ContactColumns,
  type ContactValues,
  type ContactWrite,
} from "./fields";

/** Every query on `contacts` itself. Each function takes the workspace id first. */

export const CONSENT_CHANNELS = ["email", "sms", "push", "chatapp1", "chatapp2"] as const;
export type ConsentChannel = (typeof CONSENT_CHANNELS)[number];

export type ContactView = { id: string } & ContactValues & {
    consent: Record<ConsentChannel, ConsentEntry>;
    createdAt: string;
    updatedAt: string;
  };

export type ContactRow = { id: string; workspace_id: string } & ContactColumns & {
    consent: Record<string, ConsentEntry>;
    created_at: Date;
    updated_at: Date;
  };

/** Every channel present; channels never set read `unknown`. */
export function fullConsent(
  stored: Record<string, ConsentEntry> | null | undefined,
): Record<ConsentChannel, ConsentEntry> {
  const out = {} as Record<ConsentChannel, ConsentEntry>;
  for (const channel of CONSENT_CHANNELS) {
    out[channel] = stored?.[channel] ?? { status: "unknown", source: null, updatedAt: null };
  }
  return out;
}

export function contactView(row: ContactRow): ContactView {
  return {
    id: row.id,
    ...valuesOf(row),
    consent: fullConsent(row.consent),
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

const JSON_FIELDS = new Set<string>(fieldsOfKind("json"));

/** Map a unique violation to the contract's 409 naming the field. */
export function rethrowUnique(err: unknown): never {
  const constraint = uniqueViolation(err);
  if (constraint === "contacts_email_uq") throw conflict("A contact with this email already exists");
  if (constraint === "contacts_external_id_uq")
    throw conflict("A contact with this externalId already exists");
  throw err;
}

export async function getRow(
  workspaceId: string,
  id: string,
  transaction?: Transaction,
  lock = false,
): Promise<ContactRow | null> {
  const sequelize = await database();
  const rows = await sequelize.query<ContactRow>(
    `SELECT * FROM contacts WHERE workspace_id = $1 AND id = $2${lock ? " FOR UPDATE" : ""}`,
    { bind: [workspaceId, id], type: QueryTypes.SELECT, transaction },
  );
  return rows[0] ?? null;
}

export async function getContact(workspaceId: string, id: string): Promise<ContactView | null> {
  const row = await getRow(workspaceId, id);
  return row ? contactView(row) : null;
}

export async function contactsByIds(workspaceId: string, ids: string[]): Promise<ContactView[]> {
  if (!ids.length) return [];
  const sequelize = await database();
  const rows = await sequelize.query<ContactRow>(
    `SELECT * FROM contacts WHERE workspace_id = $1 AND id = ANY ($2::text[])`,
    { bind: [workspaceId, ids], type: QueryTypes.SELECT },
  );
  return rows.map(contactView);
}

export async function existingContactIds(workspaceId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const sequelize = await database();
  const rows = await sequelize.query<{ id: string }>(
    `SELECT id FROM contacts WHERE workspace_id = $1 AND id = ANY ($2::text[])`,
    { bind: [workspaceId, ids], type: QueryTypes.SELECT },
  );
  return rows.map((r) => r.id);
}

/** The contact an address belongs to (email or phone, normalised), or null. */
export async function contactByAddress(
  workspaceId: string,
  channel: "email" | "phone",
  address: string,
): Promise<ContactView | null> {
  const value = channel === "email" ? normalizeEmail(address) : normalizePhone(address);
  if (!value) return null;
  const sequelize = await database();
  const [row] = await sequelize.query<ContactRow>(
    `SELECT * FROM contacts WHERE workspace_id = $1 AND ${channel === "email" ? "email" : "phone"} = $2 ORDER BY created_at LIMIT 1`,
    { bind: [workspaceId, value], type: QueryTypes.SELECT },
  );
  return row ? contactView(row) : null;
}

export async function insertContact(
  workspaceId: string,
  write: ContactWrite,
  transaction?: Transaction,
): Promise<ContactRow> {
  const sequelize = await database();
  const b = new Binds();
  const cols = ["id", "workspace_id"];
  const vals = [b.p(newId()), b.p(workspaceId)];
  for (const [field, value] of Object.entries(write) as Array<[keyof ContactWrite, unknown]>) {
    if (value === undefined) continue;
    cols.push(COLUMNS[field]);
    vals.push(JSON_FIELDS.has(field) ? `${b.p(JSON.stringify(value))}::jsonb` : b.p(value));
  }
  try {
    const rows = await sequelize.query<ContactRow>(
      `INSERT INTO contacts (${cols.join(", ")}) VALUES (${vals.join(", ")}) RETURNING *`,
      { bind: b.values, type: QueryTypes.SELECT, transaction },
    );
    return rows[0];
  } catch (err) {
    rethrowUnique(err);
  }
}

/** Write the given columns (already merged) of one contact. */
export async function updateColumns(
  workspaceId: string,
  id: string,
  write: ContactWrite,
  transaction?: Transaction,
): Promise<ContactRow | null> {
  const sequelize = await database();
  const b = new Binds();
  const sets = ["updated_at = now()"];
  for (const [field, value] of Object.entries(write) as Array<[keyof ContactWrite, unknown]>) {
    if (value === undefined) continue;
    sets.push(
      `${COLUMNS[field]} = ${JSON_FIELDS.has(field) ? `${b.p(JSON.stringify(value))}::jsonb` : b.p(value)}`,
    );
  }
  try {
    const rows = await sequelize.query<ContactRow>(
      `UPDATE contacts SET ${sets.join(", ")} WHERE workspace_id = ${b.p(workspaceId)} AND id = ${b.p(id)} RETURNING *`,
      { bind: b.values, type: QueryTypes.SELECT, transaction },
    );
    return rows[0] ?? null;
  } catch (err) {
    rethrowUnique(err);
  }
}

/** The contact's row locked for its erasure, or null. */
export async function lockContact(
  workspaceId: string,
  id: string,
  transaction: Transaction,
): Promise<{ id: string; email: string | null } | null> {
  const sequelize = await database();
  const rows = await sequelize.query<{ id: string; email: string | null }>(
    `SELECT id, email FROM contacts WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    { bind: [workspaceId, id], type: QueryTypes.SELECT, transaction },
  );
  return rows[0] ?? null;
}

export async function deleteContactRow(
  workspaceId: string,
  id: string,
  transaction: Transaction,
): Promise<void> {
  const sequelize = await database();
  await sequelize.query(`DELETE FROM contacts WHERE workspace_id = $1 AND id = $2`, {
    bind: [workspaceId, id],
    transaction,
  });
}

export async function deleteContacts(
  workspaceId: string,
  ids: string[],
  transaction?: Transaction,
): Promise<Array<{ id: string; email: string | null }>> {
  const sequelize = await database();
  return sequelize.query<{ id: string; email: string | null }>(
    `DELETE FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[]) RETURNING id, email`,
    { bind: [workspaceId, ids], type: QueryTypes.SELECT, transaction },
  );
}

/** A deleted company's contacts keep their rows, unlinked (contacts.company_id carries no foreign key). */
export async function unlinkCompany(workspaceId: string, companyId: string): Promise<number> {
  const sequelize = await database();
  const [, affected] = await sequelize.query(
    `UPDATE contacts SET company_id = NULL, updated_at = now() WHERE workspace_id = $1 AND company_id = $2`,
    { bind: [workspaceId, companyId], type: QueryTypes.UPDATE },
  );
  return affected;
}

export async function recordStageChange(
  workspaceId: string,
  contactId: string,
  from: string | null,
  to: string | null,
  actor: { actorType: string; actorId: string | null },
  reason: string | null,
  transaction?: Transaction,
): Promise<void> {
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO contact_stage_history (id, workspace_id, contact_id, from_stage, to_stage, reason, changed_by_type, changed_by_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    {
      bind: [newId(), workspaceId, contactId, from, to, reason, actor.actorType, actor.actorId],
      transaction,
    },
  );
}

// ---------------------------------------------------------------- list filters

export interface ContactFilter {
  search?: string;
  tag?: string;
  stage?: string;
  createdFrom?: Date;
  createdTo?: Date;
  country?: string;
  city?: string;
  attributes?: Record<string, unknown>;
  customFields?: Record<string, unknown>;
  ids?: string[];
}

export function filterWhere(workspaceId: string, filter: ContactFilter, b: Binds): string {
  const where = [`workspace_id = ${b.p(workspaceId)}`];
  // `search_text` is lower-cased email, names and phone, trigram-indexed (migration 0005).
  if (filter.search?.trim())
    where.push(`search_text LIKE ${b.p(`%${likeEscape(filter.search.trim().toLowerCase())}%`)}`);
  if (filter.tag) where.push(`tags @> ARRAY[${b.p(filter.tag)}]::text[]`);
  if (filter.stage) where.push(`stage = ${b.p(filter.stage)}`);
  if (filter.country) where.push(`country = ${b.p(filter.country)}`);
  if (filter.city) where.push(`city = ${b.p(filter.city)}`);
  if (filter.createdFrom) where.push(`created_at >= ${b.p(filter.createdFrom)}`);
  if (filter.createdTo) where.push(`created_at <= ${b.p(filter.createdTo)}`);
  if (filter.ids) where.push(`id = ANY(${b.p(filter.ids)}::text[])`);
  for (const [column, values] of [
    ["attributes", filter.attributes],
    ["custom_fields", filter.customFields],
  ] as const) {
    for (const [key, value] of Object.entries(values ?? {})) {
      // Query strings carry text: match the value as a string, or as the number/boolean it spells.
      // Containment (@>) lets the GIN index on attributes answer.
      const alternatives = jsonAlternatives(String(value)).map(
        (v) => `${column} @> ${b.p(JSON.stringify({ [key]: v }))}::jsonb`,
      );
      where.push(`(${alternatives.join(" OR ")})`);
    }
  }
  return where.join(" AND ");
}

/** Pure: `"5"` may mean the string or the number 5; `"true"` the string or the boolean. */
export function jsonAlternatives(text: string): unknown[] {
  const out: unknown[] = [text];
  if (/^-?\d+(\.\d+)?$/.test(text) && Number.isFinite(Number(text))) out.push(Number(text));
  if (text === "true" || text === "false") out.push(text === "true");
  return out;
}

export const SORTABLE: Record<string, string> = {
  id: "id",
  createdAt: "created_at",
  updatedAt: "updated_at",
  email: "email",
  firstName: "first_name",
  lastName: "last_name",
  score: "score",
  stage: "stage",
  country: "country",
  city: "city",
};

export function orderBy(sort: string | undefined): string {
  return (
    sortOrder(sort, SORTABLE, "-createdAt")
      // PostgreSQL's default null placement, so (created_at DESC, id DESC) matches contacts_created_idx.
      .map(([column, direction]) => `${column} ${direction}`)
      .join(", ")
  );
}

export async function listContacts(
  workspaceId: string,
  filter: ContactFilter,
  sort: string | undefined,
  page: PageRequest,
): Promise<Page<ContactView>> {
  const sequelize = await database();
  const order = orderBy(sort);
  const b = new Binds();
  const where = filterWhere(workspaceId, filter, b);
  const [rows, counted] = await Promise.all([
    sequelize.query<ContactRow>(
      `SELECT * FROM contacts WHERE ${where} ORDER BY ${order} LIMIT ${page.limit} OFFSET ${page.offset}`,
      { bind: b.values, type: QueryTypes.SELECT },
    ),
    sequelize.query<{ n: string }>(`SELECT count(*) AS n FROM contacts WHERE ${where}`, {
      bind: b.values,
      type: QueryTypes.SELECT,
    }),
  ]);
  return pageOf(rows.map(contactView), Number(counted[0].n), page);
}

/** Ids matching a filter, in id order, `batch` at a time (keyset, so it scales to any size). */
export async function* idsMatching(
  workspaceId: string,
  filter: ContactFilter,
  batch = 1000,
): AsyncGenerator<string[]> {
  const sequelize = await database();
  let after = "";
  for (;;) {
    const b = new Binds();
    const where = filterWhere(workspaceId, filter, b);
    const rows = await sequelize.query<{ id: string }>(
      `SELECT id FROM contacts WHERE ${where} AND id > ${b.p(after)} ORDER BY id LIMIT ${batch}`,
      { bind: b.values, type: QueryTypes.SELECT },
    );
    if (!rows.length) return;
    yield rows.map((r) => r.id);
    after = rows[rows.length - 1].id;
  }
}

/** Full rows matching a filter, in id order, a batch at a time (export). */
export async function* rowsMatching(
  workspaceId: string,
  filter: ContactFilter,
  batch = 1000,
): AsyncGenerator<ContactRow[]> {
  const sequelize = await database();
  let after = "";
  for (;;) {
    const b = new Binds();
    const where = filterWhere(workspaceId, filter, b);
    const rows = await sequelize.query<ContactRow>(
      `SELECT * FROM contacts WHERE ${where} AND id > ${b.p(after)} ORDER BY id LIMIT ${batch}`,
      { bind: b.values, type: QueryTypes.SELECT },
    );
    if (!rows.length) return;
    yield rows;
    after = rows[rows.length - 1].id;
  }
}

// ---------------------------------------------------------------- definitions used when writing

/** What a contact write is checked against: the workspace's custom fields and lifecycle stage keys. */
export interface WorkspaceDefs {
  customFields: CustomFieldDef[];
  stages: Set<string>;
}

/** A workspace's definitions in one statement (each write batch asks; a workspace without stages gets the defaults). */
export async function writeDefinitions(workspaceId: string): Promise<WorkspaceDefs> {
  const [row] = await queryPrepared<{ custom_fields: CustomFieldDef[]; stages: string[] | null }>(
    `SELECT coalesce((SELECT json_agg(json_build_object('key', f.key, 'type', f.type, 'options', f.options, 'required', f.required))
                        FROM custom_fields f WHERE f.workspace_id = $1), '[]'::json) AS custom_fields,
            (SELECT array_agg(s.key) FROM lifecycle_stages s WHERE s.workspace_id = $1) AS stages`,
    [workspaceId],
  );
  return {
    customFields: row.custom_fields,
    stages: row.stages ? new Set(row.stages) : await stageKeys(workspaceId),
  };
}

/** Default lifecycle stages a workspace starts with (HubSpot's familiar ladder). */
export const DEFAULT_STAGES: Array<{ key: string; name: string }> = [
  { key: "subscriber", name: "Subscriber" },
  { key: "lead", name: "Lead" },
  { key: "mql", name: "Marketing qualified lead" },
  { key: "sql", name: "Sales qualified lead" },
  { key: "opportunity", name: "Opportunity" },
  { key: "customer", name: "Customer" },
  { key: "evangelist", name: "Evangelist" },
  { key: "other", name: "Other" },
];

/** A workspace with no stage definitions yet gets the defaults, once. */
export async function ensureStages(workspaceId: string): Promise<void> {
  const sequelize = await database();
  const existing = await sequelize.query<{ n: string }>(
    `SELECT count(*) AS n FROM lifecycle_stages WHERE workspace_id = $1`,
    {
      bind: [workspaceId],
      type: QueryTypes.SELECT,
    },
  );
  if (Number(existing[0].n) > 0) return;
  const b = new Binds();
  const values = DEFAULT_STAGES.map(
    (s, i) => `(${b.p(newId())}, ${b.p(workspaceId)}, ${b.p(s.key)}, ${b.p(s.name)}, ${i})`,
  );
  await sequelize.query(
    `INSERT INTO lifecycle_stages (id, workspace_id, key, name, position) VALUES ${values.join(", ")}
     ON CONFLICT (workspace_id, key) DO NOTHING`,
    { bind: b.values },
  );
}

export async function stageKeys(workspaceId: string): Promise<Set<string>> {
  await ensureStages(workspaceId);
  const sequelize = await database();
  const rows = await sequelize.query<{ key: string }>(
    `SELECT key FROM lifecycle_stages WHERE workspace_id = $1`,
    {
      bind: [workspaceId],
      type: QueryTypes.SELECT,
    },
  );
  return new Set(rows.map((r) => r.key));
}

export function assertNoIssues(issues: Array<{ field: string; message: string }>): void {
  if (issues.length) throw validationError(`${issues[0].field} ${issues[0].message}`, issues);
}

// ---------------------------------------------------------------- insights

/** Attribute keys in use, most used first, with the JSON types seen. */
export async function attributeKeys(
  workspaceId: string,
): Promise<Array<{ key: string; count: number; types: string[] }>> {
  const sequelize = await database();
  const rows = await sequelize.query<{ key: string; count: string; types: string[] }>(
    `SELECT kv.key, count(*) AS count, array_agg(DISTINCT jsonb_typeof(kv.value)) AS types
       FROM contacts c, jsonb_each(c.attributes) kv
      WHERE c.workspace_id = $1
      GROUP BY kv.key ORDER BY count(*) DESC, kv.key LIMIT 1000`,
    { bind: [workspaceId], type: QueryTypes.SELECT },
  );
  return rows.map((r) => ({ key: r.key, count: Number(r.count), types: r.types }));
}

/** The attribute and custom field keys the matching contacts use, and the workspace's defined custom fields. */
export async function exportKeys(
  workspaceId: string,
  filter: ContactFilter,
): Promise<{ attrs: Array<{ key: string }>; custom: Array<{ key: string }>; defs: Array<{ key: string }> }> {
  const sequelize = await database();
  const b = new Binds();
  const where = filterWhere(workspaceId, filter, b);
  const [attrs, custom, defs] = await Promise.all([
    sequelize.query<{ key: string }>(
      `SELECT DISTINCT k AS key FROM contacts, jsonb_object_keys(attributes) k WHERE ${where} ORDER BY 1`,
      { bind: b.values, type: QueryTypes.SELECT },
    ),
    sequelize.query<{ key: string }>(
      `SELECT DISTINCT k AS key FROM contacts, jsonb_object_keys(custom_fields) k WHERE ${where} ORDER BY 1`,
      { bind: b.values, type: QueryTypes.SELECT },
    ),
    sequelize.query<{ key: string }>(
      `SELECT key FROM custom_fields WHERE workspace_id = $1 ORDER BY position, key`,
      {
        bind: [workspaceId],
        type: QueryTypes.SELECT,
      },
    ),
  ]);
  return { attrs, custom, defs };
}

/** Contact counts by country and by city (contacts without a country count under `null`). */
export async function geoCounts(
  workspaceId: string,
  country?: string,
): Promise<{
  countries: Array<{ country: string | null; count: number }>;
  cities: Array<{ country: string | null; city: string; count: number }>;
}> {
  const sequelize = await database();
  const countries = await sequelize.query<{ country: string | null; count: string }>(
    `SELECT country, count(*) AS count FROM contacts WHERE workspace_id = $1 GROUP BY country ORDER BY count(*) DESC, country NULLS LAST LIMIT 500`,
    { bind: [workspaceId], type: QueryTypes.SELECT },
  );
  const b = new Binds();
  const where = [`workspace_id = ${b.p(workspaceId)}`, "city IS NOT NULL"];
  if (country) where.push(`country = ${b.p(country)}`);
  const cities = await sequelize.query<{ country: string | null; city: string; count: string }>(
    `SELECT country, city, count(*) AS count FROM contacts WHERE ${where.join(" AND ")}
      GROUP BY country, city ORDER BY count(*) DESC, country NULLS LAST, city LIMIT 1000`,
    { bind: b.values, type: QueryTypes.SELECT },
  );
  return {
    countries: countries.map((r) => ({ country: r.country, count: Number(r.count) })),
    cities: cities.map((r) => ({ country: r.country, city: r.city, count: Number(r.count) })),
  };
}

/**
 * After a large load: VACUUM moves the search index's pending entries into the
 * index proper and marks pages all-visible (counts become index-only scans),
 * ANALYZE refreshes planner statistics; autovacuum would get there later.
 */
export async function settleContacts(): Promise<void> {
  const sequelize = await database();
  await sequelize.query("VACUUM (ANALYZE) contacts");
}
