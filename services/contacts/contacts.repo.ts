import { type Transaction } from "sequelize";
import { MicroBatcher } from "../../lib/batcher";
import { newId } from "../../lib/crypto";
import { Binds, query, queryAcrossWorkspaces, queryPrepared, uniqueViolation } from "../../lib/database";
import { conflict, validationError } from "../../lib/errors";
import { CONSENT_CHANNELS, type ConsentChannel } from "../../lib/channels";
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
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on `contacts` itself. Each function takes the workspace id first. */

export type ContactView = { id: string } & ContactValues & {
    consent: Record<ConsentChannel, ConsentEntry>;
    createdAt: string;
    updatedAt: string;
  };

export type ContactRow = { id: string; workspace_id: WorkspaceId } & ContactColumns & {
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
  workspaceId: WorkspaceId,
  id: string,
  transaction?: Transaction,
  lock = false,
): Promise<ContactRow | null> {
  const rows = await query<ContactRow>(
    workspaceId,
    `SELECT * FROM contacts WHERE workspace_id = $1 AND id = $2${lock ? " FOR UPDATE" : ""}`,
    [id],
    transaction,
  );
  return rows[0] ?? null;
}

export async function getContact(workspaceId: WorkspaceId, id: string): Promise<ContactView | null> {
  const row = await getRow(workspaceId, id);
  return row ? contactView(row) : null;
}

export async function contactsByIds(workspaceId: WorkspaceId, ids: string[]): Promise<ContactView[]> {
  if (!ids.length) return [];
  const rows = await query<ContactRow>(
    workspaceId,
    `SELECT * FROM contacts WHERE workspace_id = $1 AND id = ANY ($2::text[])`,
    [ids],
  );
  return rows.map(contactView);
}

export async function existingContactIds(workspaceId: WorkspaceId, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await query<{ id: string }>(
    workspaceId,
    `SELECT id FROM contacts WHERE workspace_id = $1 AND id = ANY ($2::text[])`,
    [ids],
  );
  return rows.map((r) => r.id);
}

/** Where each kind of address is kept (a chatapp1 chat id in `attributes`, indexed by migration 0077). */
const ADDRESS_COLUMNS = {
  email: "email",
  phone: "phone",
  chatapp1ChatId: "(attributes->>'chatapp1ChatId')",
} as const;

export type AddressType = keyof typeof ADDRESS_COLUMNS;

/** An address as contacts keep it (email and phone normalised); null when it is not one. */
export const addressValue = (type: AddressType, address: string): string | null =>
  type === "email"
    ? normalizeEmail(address)
    : type === "phone"
      ? normalizePhone(address)
      : address.trim() || null;

/** The contact an address belongs to (email or phone, normalised; a chat id), or null. */
export async function contactByAddress(
  workspaceId: WorkspaceId,
  type: AddressType,
  address: string,
): Promise<ContactView | null> {
  const value = addressValue(type, address);
  return value ? addressReader.add({ workspaceId, type, value }) : null;
}

/**
 * Each address's first contact, by the address as contacts keep it (see
 * `addressValue`; addresses that are none are left out), in one statement.
 */
export async function contactsByAddresses(
  workspaceId: WorkspaceId,
  type: AddressType,
  addresses: string[],
  transaction?: Transaction,
): Promise<Map<string, ContactView>> {
  const values = [...new Set(addresses.flatMap((a) => addressValue(type, a) ?? []))];
  if (!values.length) return new Map();
  const column = ADDRESS_COLUMNS[type];
  const rows = await queryPrepared<ContactRow & { address_key: string }>(
    workspaceId,
    `SELECT DISTINCT ON (${column}) *, ${column} AS address_key FROM contacts
      WHERE workspace_id = $1 AND ${column} = ANY ($2::text[]) ORDER BY ${column}, created_at`,
    [values],
    transaction,
  );
  return new Map(rows.map((row) => [row.address_key, contactView(row)]));
}

/** An address looked up outside a transaction (kept as contacts keep it). */
interface AddressAsk {
  workspaceId: WorkspaceId;
  type: AddressType;
  value: string;
}

/**
 * Concurrent look-ups of addresses (every inbound message asks for its
 * sender's) go together: one statement per workspace and kind of address in
 * a batch, each address's first contact.
 */
const addressReader = new MicroBatcher(
  async (asks: AddressAsk[]): Promise<Array<ContactView | null>> => {
    const groups = new Map<string, AddressAsk[]>();
    for (const ask of asks) {
      const key = `${ask.workspaceId}\n${ask.type}`;
      groups.set(key, [...(groups.get(key) ?? []), ask]);
    }
    const found = new Map<string, ContactView>();
    for (const [key, group] of groups) {
      const { workspaceId, type } = group[0];
      const byValue = await contactsByAddresses(
        workspaceId,
        type,
        group.map((a) => a.value),
      );
      for (const [value, contact] of byValue) found.set(`${key}\n${value}`, contact);
    }
    return asks.map((a) => found.get(`${a.workspaceId}\n${a.type}\n${a.value}`) ?? null);
  },
  { maxBatch: 200, lanes: 1 },
);

/**
 * Serialise the writers that create a contact for any of these addresses
 * until the transaction ends (any replica): the second finds the first's
 * contact. One statement, the locks taken in key order, so two writers
 * locking overlapping sets never wait on each other.
 */
export async function lockAddresses(
  workspaceId: WorkspaceId,
  type: AddressType,
  addresses: string[],
  transaction: Transaction,
): Promise<void> {
  const keys = [...new Set(addresses.map((a) => `${type}:${addressValue(type, a) ?? a}`))].sort();
  await queryPrepared(
    workspaceId,
    `SELECT pg_advisory_xact_lock(hashtextextended('contacts:' || $1 || ':' || k, 0)) FROM unnest($2::text[]) AS k`,
    [keys],
    transaction,
  );
}

/** Every contact a chatapp1 chat is noted on (one, unless a link moves it). */
export async function contactsWithChat(workspaceId: WorkspaceId, chatId: string): Promise<ContactRow[]> {
  return query<ContactRow>(
    workspaceId,
    `SELECT * FROM contacts WHERE workspace_id = $1 AND (attributes->>'chatapp1ChatId') = $2 ORDER BY created_at`,
    [chatId],
  );
}

export async function insertContact(
  workspaceId: WorkspaceId,
  write: ContactWrite,
  transaction?: Transaction,
): Promise<ContactRow> {
  return (await insertContacts(workspaceId, [write], transaction))[0];
}

/** New contacts in one statement (a column a write leaves out takes its default); their rows in the order given. */
export async function insertContacts(
  workspaceId: WorkspaceId,
  writes: ContactWrite[],
  transaction?: Transaction,
): Promise<ContactRow[]> {
  if (!writes.length) return [];
  const fields = [
    ...new Set(
      writes.flatMap((w) => (Object.keys(w) as Array<keyof ContactWrite>).filter((f) => w[f] !== undefined)),
    ),
  ];
  const b = Binds.inWorkspace();
  const ids = writes.map(() => newId());
  const rows = writes.map((write, i) => {
    const vals = [b.p(ids[i]), "$1"];
    for (const field of fields) {
      const value = write[field];
      vals.push(
        value === undefined
          ? "DEFAULT"
          : JSON_FIELDS.has(field)
            ? `${b.p(JSON.stringify(value))}::jsonb`
            : b.p(value),
      );
    }
    return `(${vals.join(", ")})`;
  });
  try {
    const inserted = await query<ContactRow>(
      workspaceId,
      `INSERT INTO contacts (id, workspace_id${fields.map((f) => `, ${COLUMNS[f]}`).join("")})
       VALUES ${rows.join(", ")} RETURNING *`,
      b.values,
      transaction,
    );
    const byId = new Map(inserted.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id)!);
  } catch (err) {
    rethrowUnique(err);
  }
}

/** Write the given columns (already merged) of one contact. */
export async function updateColumns(
  workspaceId: WorkspaceId,
  id: string,
  write: ContactWrite,
  transaction?: Transaction,
): Promise<ContactRow | null> {
  const b = Binds.inWorkspace();
  const sets = ["updated_at = now()"];
  for (const [field, value] of Object.entries(write) as Array<[keyof ContactWrite, unknown]>) {
    if (value === undefined) continue;
    sets.push(
      `${COLUMNS[field]} = ${JSON_FIELDS.has(field) ? `${b.p(JSON.stringify(value))}::jsonb` : b.p(value)}`,
    );
  }
  try {
    const rows = await query<ContactRow>(
      workspaceId,
      `UPDATE contacts SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = ${b.p(id)} RETURNING *`,
      b.values,
      transaction,
    );
    return rows[0] ?? null;
  } catch (err) {
    rethrowUnique(err);
  }
}

/** The contact's row locked for its erasure, or null. */
export async function lockContact(
  workspaceId: WorkspaceId,
  id: string,
  transaction: Transaction,
): Promise<{ id: string; email: string | null } | null> {
  const rows = await query<{ id: string; email: string | null }>(
    workspaceId,
    `SELECT id, email FROM contacts WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    [id],
    transaction,
  );
  return rows[0] ?? null;
}

export async function deleteContactRow(
  workspaceId: WorkspaceId,
  id: string,
  transaction: Transaction,
): Promise<void> {
  await query(workspaceId, `DELETE FROM contacts WHERE workspace_id = $1 AND id = $2`, [id], transaction);
}

export async function deleteContacts(
  workspaceId: WorkspaceId,
  ids: string[],
  transaction?: Transaction,
): Promise<Array<{ id: string; email: string | null }>> {
  return query<{ id: string; email: string | null }>(
    workspaceId,
    `DELETE FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[]) RETURNING id, email`,
    [ids],
    transaction,
  );
}

/** A deleted company's contacts keep their rows, unlinked (contacts.company_id carries no foreign key). */
export async function unlinkCompany(workspaceId: WorkspaceId, companyId: string): Promise<number> {
  const unlinked = await query(
    workspaceId,
    `UPDATE contacts SET company_id = NULL, updated_at = now() WHERE workspace_id = $1 AND company_id = $2 RETURNING 1`,
    [companyId],
  );
  return unlinked.length;
}

export async function recordStageChange(
  workspaceId: WorkspaceId,
  contactId: string,
  from: string | null,
  to: string | null,
  actor: { actorType: string; actorId: string | null },
  reason: string | null,
  transaction?: Transaction,
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO contact_stage_history (id, workspace_id, contact_id, from_stage, to_stage, reason, changed_by_type, changed_by_id)
     VALUES ($2, $1, $3, $4, $5, $6, $7, $8)`,
    [newId(), contactId, from, to, reason, actor.actorType, actor.actorId],
    transaction,
  );
}

// ---------------------------------------------------------------- definitions used when writing

/** What a contact write is checked against: the workspace's custom fields and lifecycle stage keys. */
export interface WorkspaceDefs {
  customFields: CustomFieldDef[];
  stages: Set<string>;
}

/** A workspace's definitions in one statement (each write batch asks; a workspace without stages gets the defaults). */
export async function writeDefinitions(workspaceId: WorkspaceId): Promise<WorkspaceDefs> {
  const [row] = await queryPrepared<{ custom_fields: CustomFieldDef[]; stages: string[] | null }>(
    workspaceId,
    `SELECT coalesce((SELECT json_agg(json_build_object('key', f.key, 'type', f.type, 'options', f.options, 'required', f.required))
                        FROM custom_fields f WHERE f.workspace_id = $1), '[]'::json) AS custom_fields,
            (SELECT array_agg(s.key) FROM lifecycle_stages s WHERE s.workspace_id = $1) AS stages`,
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
export async function ensureStages(workspaceId: WorkspaceId): Promise<void> {
  const existing = await query<{ n: string }>(
    workspaceId,
    `SELECT count(*) AS n FROM lifecycle_stages WHERE workspace_id = $1`,
  );
  if (Number(existing[0].n) > 0) return;
  const b = Binds.inWorkspace();
  const values = DEFAULT_STAGES.map((s, i) => `(${b.p(newId())}, $1, ${b.p(s.key)}, ${b.p(s.name)}, ${i})`);
  await query(
    workspaceId,
    `INSERT INTO lifecycle_stages (id, workspace_id, key, name, position) VALUES ${values.join(", ")}
     ON CONFLICT (workspace_id, key) DO NOTHING`,
    b.values,
  );
}

export async function stageKeys(workspaceId: WorkspaceId): Promise<Set<string>> {
  await ensureStages(workspaceId);
  const rows = await query<{ key: string }>(
    workspaceId,
    `SELECT key FROM lifecycle_stages WHERE workspace_id = $1`,
  );
  return new Set(rows.map((r) => r.key));
}

export function assertNoIssues(issues: Array<{ field: string; message: string }>): void {
  if (issues.length) throw validationError(`${issues[0].field} ${issues[0].message}`, issues);
}

// ---------------------------------------------------------------- insights

/**
 * After a large load: VACUUM moves the search index's pending entries into the
 * index proper and marks pages all-visible (counts become index-only scans),
 * ANALYZE refreshes planner statistics; autovacuum would get there later.
 */
export async function settleContacts(): Promise<void> {
  await queryAcrossWorkspaces("VACUUM (ANALYZE) contacts");
}
