import { type Transaction } from "sequelize";
import { query, queryAcrossWorkspaces } from "../../lib/database";
import type { ContactRow } from "./contacts.repo";
import { existingTables, MOVABLE_TABLES } from "./related.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** The statements of a merge (merge.ts), each in the merge's transaction. */

/** The contacts of a merge, locked in id order. */
export async function lockContacts(
  workspaceId: WorkspaceId,
  ids: string[],
  transaction: Transaction,
): Promise<ContactRow[]> {
  return query<ContactRow>(
    workspaceId,
    `SELECT * FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE`,
    [ids],
    transaction,
  );
}

/**
 * Rows pointing at the duplicates move to the primary; segment memberships
 * are merged (earliest entry kept) so none is lost or doubled, and inbox
 * conversations move with at most one per channel left open.
 */
export async function moveRelatedRows(
  primaryId: string,
  ids: string[],
  transaction: Transaction,
): Promise<void> {
  const present = await existingTables([...MOVABLE_TABLES, "segment_members", "inbox_threads"], transaction);
  if (present.has("inbox_threads")) {
    // A contact has one conversation per channel that is not closed: of the merged contacts' open ones on a
    // channel the primary's (else the newest) stays open, the others close (kept, with their messages).
    await queryAcrossWorkspaces(
      `UPDATE inbox_threads t SET status = 'closed', snoozed_until = NULL, updated_at = now()
        WHERE t.contact_id = ANY($2::text[]) AND t.status <> 'closed'
          AND (EXISTS (SELECT 1 FROM inbox_threads p WHERE p.contact_id = $1 AND p.channel = t.channel AND p.status <> 'closed')
               OR EXISTS (SELECT 1 FROM inbox_threads o WHERE o.contact_id = ANY($2::text[]) AND o.channel = t.channel
                            AND o.status <> 'closed' AND (o.last_message_at, o.id) > (t.last_message_at, t.id)))`,
      [primaryId, ids],
      transaction,
    );
    await queryAcrossWorkspaces(
      `UPDATE inbox_threads SET contact_id = $1 WHERE contact_id = ANY($2::text[])`,
      [primaryId, ids],
      transaction,
    );
  }
  for (const table of MOVABLE_TABLES) {
    if (!present.has(table)) continue;
    await queryAcrossWorkspaces(
      `UPDATE ${table} SET contact_id = $1 WHERE contact_id = ANY($2::text[])`,
      [primaryId, ids],
      transaction,
    );
  }
  if (present.has("segment_members")) {
    await queryAcrossWorkspaces(
      `INSERT INTO segment_members (segment_id, contact_id, entered_at)
         SELECT segment_id, $1, min(entered_at) FROM segment_members WHERE contact_id = ANY($2::text[]) GROUP BY segment_id
         ON CONFLICT DO NOTHING`,
      [primaryId, ids],
      transaction,
    );
    await queryAcrossWorkspaces(
      `DELETE FROM segment_members WHERE contact_id = ANY($1::text[])`,
      [ids],
      transaction,
    );
  }
}

/** The primary's merged profile, written whole. */
export async function writeMergedProfile(
  workspaceId: WorkspaceId,
  primaryId: string,
  m: Partial<ContactRow>,
  transaction: Transaction,
): Promise<ContactRow> {
  const updated = await query<ContactRow>(
    workspaceId,
    `UPDATE contacts SET email = $3, phone = $4, first_name = $5, last_name = $6, external_id = $7, locale = $8,
                timezone = $9, country = $10, city = $11, stage = $12, company_id = $13, owner_id = $14, tags = $15::text[],
                attributes = $16::jsonb, custom_fields = $17::jsonb, consent = $18::jsonb, score = $19, updated_at = now()
          WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    [
      primaryId,
      m.email,
      m.phone,
      m.first_name,
      m.last_name,
      m.external_id,
      m.locale,
      m.timezone,
      m.country,
      m.city,
      m.stage,
      m.company_id,
      m.owner_id,
      m.tags,
      JSON.stringify(m.attributes),
      JSON.stringify(m.custom_fields),
      JSON.stringify(m.consent),
      m.score,
    ],
    transaction,
  );
  return updated[0];
}
