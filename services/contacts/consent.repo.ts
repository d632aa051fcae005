import { type Transaction } from "sequelize";
import { query } from "../../lib/database";
import type { ConsentEntry } from "../../models";
import type { ContactRow } from "./contacts.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** A contact's consent (and its topic choices, kept in attributes): the writes of consent.ts and sending.ts. */

export async function writeConsent(
  workspaceId: WorkspaceId,
  contactId: string,
  consent: Record<string, ConsentEntry>,
  transaction: Transaction,
): Promise<ContactRow> {
  const rows = await query<ContactRow>(
    workspaceId,
    `UPDATE contacts SET consent = $2::jsonb, updated_at = now() WHERE workspace_id = $1 AND id = $3 RETURNING *`,
    [JSON.stringify(consent), contactId],
    transaction,
  );
  return rows[0];
}

export async function writePreferences(
  workspaceId: WorkspaceId,
  contactId: string,
  consent: Record<string, ConsentEntry>,
  attributes: Record<string, unknown>,
  transaction: Transaction,
): Promise<ContactRow> {
  const [updated] = await query<ContactRow>(
    workspaceId,
    `UPDATE contacts SET consent = $3::jsonb, attributes = $4::jsonb, updated_at = now()
        WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    [contactId, JSON.stringify(consent), JSON.stringify(attributes)],
    transaction,
  );
  return updated;
}
