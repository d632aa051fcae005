import { QueryTypes, type Transaction } from "sequelize";
import { database } from "../../lib/database";
import type { ConsentEntry } from "../../models";
import type { ContactRow } from "./contacts.repo";

/** A contact's consent (and its topic choices, kept in attributes): the writes of consent.ts and sending.ts. */

export async function writeConsent(
  workspaceId: string,
  contactId: string,
  consent: Record<string, ConsentEntry>,
  transaction: Transaction,
): Promise<ContactRow> {
  const sequelize = await database();
  const rows = await sequelize.query<ContactRow>(
    `UPDATE contacts SET consent = $1::jsonb, updated_at = now() WHERE workspace_id = $2 AND id = $3 RETURNING *`,
    { bind: [JSON.stringify(consent), workspaceId, contactId], type: QueryTypes.SELECT, transaction },
  );
  return rows[0];
}

export async function writePreferences(
  workspaceId: string,
  contactId: string,
  consent: Record<string, ConsentEntry>,
  attributes: Record<string, unknown>,
  transaction: Transaction,
): Promise<ContactRow> {
  const sequelize = await database();
  const [updated] = await sequelize.query<ContactRow>(
    `UPDATE contacts SET consent = $3::jsonb, attributes = $4::jsonb, updated_at = now()
        WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    {
      bind: [workspaceId, contactId, JSON.stringify(consent), JSON.stringify(attributes)],
      type: QueryTypes.SELECT,
      transaction,
    },
  );
  return updated;
}
