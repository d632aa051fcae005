import { type Transaction } from "sequelize";
import { query } from "../../lib/database";
import type { ConsentEntry } from "../../models";
import { RECORD_COLUMN_TYPES, SCALAR_COLUMNS } from "./fields";
import type { WorkspaceId } from "../../lib/tenancy";

/** Who writes and why: stage history rows of an upsert carry it, and the consent it writes has the reason as source. */
export interface UpsertOrigin {
  actorType: string;
  actorId: string | null;
  reason: string;
}

/** The upsert statement of upsert.ts: one per conflict key and batch, with its stage history and the rows before. */

const RECORD_COLUMNS = `id text, ${RECORD_COLUMN_TYPES}, consent jsonb`;
const SCALARS = SCALAR_COLUMNS;

function statement(conflict: "email" | "external_id" | null): string {
  const target =
    conflict === "email"
      ? "ON CONFLICT (workspace_id, email) WHERE email IS NOT NULL"
      : conflict === "external_id"
        ? "ON CONFLICT (workspace_id, external_id) WHERE external_id IS NOT NULL"
        : "";
  const update = conflict
    ? `${target} DO UPDATE SET
        ${SCALARS.map((c) => `${c} = coalesce(EXCLUDED.${c}, c.${c})`).join(",\n        ")},
        tags = c.tags || array(SELECT unnest(EXCLUDED.tags) EXCEPT SELECT unnest(c.tags)),
        attributes = c.attributes || EXCLUDED.attributes,
        custom_fields = c.custom_fields || EXCLUDED.custom_fields,
        consent = c.consent || coalesce((SELECT jsonb_object_agg(w.key, w.value) FROM jsonb_each(EXCLUDED.consent) w
                                          WHERE c.consent -> w.key ->> 'status' IS DISTINCT FROM w.value ->> 'status'), '{}'),
        updated_at = now()`
    : "";
  // Rows before the write (same snapshot as the upsert): stage changes get their history rows, opt-outs their facts, updates their changed fields.
  // Looked up row by row through the unique key (a LATERAL that OFFSET 0 keeps from becoming a join): a hash
  // join planned from stale statistics would read the whole workspace for a few rows.
  const old = conflict
    ? `SELECT c.id, c.stage, c.consent, to_jsonb(c) AS doc FROM input r
         CROSS JOIN LATERAL (SELECT * FROM contacts x WHERE x.workspace_id = $1 AND x.${conflict} = r.${conflict} OFFSET 0) c`
    : "SELECT NULL::text AS id, NULL::text AS stage, NULL::jsonb AS consent, NULL::jsonb AS doc WHERE false";
  return `WITH input AS (SELECT * FROM jsonb_to_recordset($2::jsonb) AS r(${RECORD_COLUMNS})),
    old AS (${old}),
    up AS (
      INSERT INTO contacts AS c (id, workspace_id, ${SCALARS.join(", ")}, tags, attributes, custom_fields, consent)
      SELECT r.id, $1, ${SCALARS.map((s) => `r.${s}`).join(", ")}, coalesce(r.tags, '{}'), coalesce(r.attributes, '{}'),
             coalesce(r.custom_fields, '{}'), r.consent
        FROM input r
      ${update}
      RETURNING c.id, c.email, c.first_name, c.last_name, c.external_id, c.consent, c.stage, (c.xmax = 0) AS inserted,
                CASE WHEN c.xmax <> 0 THEN to_jsonb(c) END AS doc),
    history AS (
      INSERT INTO contact_stage_history (id, workspace_id, contact_id, from_stage, to_stage, reason, changed_by_type, changed_by_id)
      SELECT gen_random_uuid()::text, $1, up.id, old.stage, up.stage, $5, $3, $4
        FROM up LEFT JOIN old ON old.id = up.id
       WHERE up.stage IS DISTINCT FROM old.stage)
    SELECT up.id, up.email, up.first_name, up.last_name, up.external_id, up.consent, up.inserted,
           old.consent AS previous_consent, old.doc AS previous_doc, up.doc
      FROM up LEFT JOIN old ON old.id = up.id`;
}

export interface Returned {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  external_id: string | null;
  consent: Record<string, ConsentEntry>;
  inserted: boolean;
  previous_consent: Record<string, ConsentEntry> | null;
  previous_doc: Record<string, unknown> | null;
  doc: Record<string, unknown> | null;
}

/** Write `records` (JSON rows with their id and consent) in one statement, in the caller's transaction. */
export async function upsertRecords(
  workspaceId: WorkspaceId,
  conflict: "email" | "external_id" | null,
  records: Array<Record<string, unknown>>,
  origin: UpsertOrigin,
  transaction: Transaction,
): Promise<Returned[]> {
  return query<Returned>(
    workspaceId,
    statement(conflict),
    [JSON.stringify(records), origin.actorType, origin.actorId, origin.reason],
    transaction,
  );
}

/** The stored custom fields of the contacts these keys name (the keys an upsert matches on), for the required-field check. */
export async function customFieldsByKey(
  workspaceId: WorkspaceId,
  emails: string[],
  externalIds: string[],
): Promise<
  Array<{ email: string | null; externalId: string | null; customFields: Record<string, unknown> }>
> {
  if (!emails.length && !externalIds.length) return [];
  return query(
    workspaceId,
    `SELECT email, external_id AS "externalId", custom_fields AS "customFields" FROM contacts
      WHERE workspace_id = $1 AND (email = ANY($2::text[]) OR external_id = ANY($3::text[]))`,
    [emails, externalIds],
  );
}
