import { type Transaction } from "sequelize";
import { isoTimeColumns, queryAcrossWorkspaces } from "../../lib/database";

/**
 * Tables of other areas that point at contacts. Each is optional (skipped
 * until its migration exists), found with `to_regclass`.
 */

/** Rows that follow a contact when it is merged into another. */
export const MOVABLE_TABLES = [
  "events",
  "contact_notes",
  "score_history",
  "deals",
  "tasks",
  "contact_stage_history",
  "messages",
  "short_link_clicks",
  "form_submissions",
  "push_subscriptions",
];

export async function existingTables(names: string[], transaction?: Transaction): Promise<Set<string>> {
  const rows = await queryAcrossWorkspaces<{ name: string }>(
    `SELECT t.name FROM unnest($1::text[]) AS t(name)
      WHERE to_regclass(t.name) IS NOT NULL
        AND EXISTS (SELECT 1 FROM information_schema.columns c
                     WHERE c.table_schema = current_schema() AND c.table_name = t.name AND c.column_name = 'contact_id')`,
    [names],
    transaction,
  );
  return new Set(rows.map((r) => r.name));
}

/** Rows of an optional table for one contact, as JSON objects (empty when the table does not exist yet). */
export async function rowsOf(
  table: string,
  contactId: string,
  orderBy: string,
  present: Set<string>,
): Promise<Array<Record<string, unknown>>> {
  if (!present.has(table)) return [];
  const rows = await queryAcrossWorkspaces<{ row: Record<string, unknown> }>(
    `SELECT to_jsonb(t) AS row FROM ${table} t WHERE t.contact_id = $1 ORDER BY ${orderBy}`,
    [contactId],
  );
  return rows.map((r) => isoTimeColumns(r.row));
}

/** Delete the contact's rows from those of `tables` that exist (a GDPR erasure, in its transaction). */
export async function eraseRows(
  tables: string[],
  contactId: string,
  present: Set<string>,
  transaction: Transaction,
): Promise<void> {
  for (const table of tables) {
    if (present.has(table))
      await queryAcrossWorkspaces(`DELETE FROM ${table} WHERE contact_id = $1`, [contactId], transaction);
  }
}
