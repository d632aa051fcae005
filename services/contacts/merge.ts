import { QueryTypes } from "sequelize";
import { database } from "../../lib/database";
import { notFound, validationError } from "../../lib/errors";
import { stageDomainEvents } from "../../lib/outbox";
import type { ConsentEntry } from "../../models";
import { contactView, rethrowUnique, type ContactRow, type ContactView } from "./contacts.repo";
import { changedFields } from "./fields";
import { contactFacts } from "./effects";
import { existingTables, MOVABLE_TABLES } from "./related";

/**
 * Merge duplicates into a primary contact, in one transaction: related rows
 * (events, notes, scores, deals, tasks, stage history, messages, form
 * submissions, segment memberships) move to the primary, the duplicates are
 * deleted, and the primary's empty fields are filled from them; the facts
 * (`contact.updated` for the primary, `contact.deleted` for each duplicate)
 * are staged in the same transaction.
 */

/** Pure: the primary's profile after absorbing the duplicates (given in priority order). */
export function mergedProfile(primary: ContactRow, duplicates: ContactRow[]): Partial<ContactRow> {
  const fill = <K extends keyof ContactRow>(key: K): ContactRow[K] => {
    if (primary[key] !== null && primary[key] !== undefined) return primary[key];
    for (const d of duplicates) if (d[key] !== null && d[key] !== undefined) return d[key];
    return primary[key];
  };
  const tags = [...primary.tags];
  for (const d of duplicates) for (const t of d.tags) if (!tags.includes(t)) tags.push(t);
  const attributes = Object.assign(
    {},
    ...[...duplicates].reverse().map((d) => d.attributes),
    primary.attributes,
  );
  const customFields = Object.assign(
    {},
    ...[...duplicates].reverse().map((d) => d.custom_fields),
    primary.custom_fields,
  );
  return {
    email: fill("email"),
    phone: fill("phone"),
    first_name: fill("first_name"),
    last_name: fill("last_name"),
    external_id: fill("external_id"),
    locale: fill("locale"),
    timezone: fill("timezone"),
    country: fill("country"),
    city: fill("city"),
    stage: fill("stage"),
    company_id: fill("company_id"),
    owner_id: fill("owner_id"),
    tags,
    attributes,
    custom_fields: customFields,
    consent: mergedConsent([primary, ...duplicates].map((c) => c.consent ?? {})),
    score: primary.score + duplicates.reduce((sum, d) => sum + d.score, 0),
  };
}

/** An opt-out anywhere wins (never message someone who said no); otherwise the newest decision. */
export function mergedConsent(all: Array<Record<string, ConsentEntry>>): Record<string, ConsentEntry> {
  const out: Record<string, ConsentEntry> = {};
  for (const consent of all) {
    for (const [channel, entry] of Object.entries(consent)) {
      const current = out[channel];
      if (!current) out[channel] = entry;
      else if (current.status === "opted_out") continue;
      else if (entry.status === "opted_out" || (entry.updatedAt ?? "") > (current.updatedAt ?? ""))
        out[channel] = entry;
    }
  }
  return out;
}

export interface MergeOutcome {
  contact: ContactView;
  removed: Array<{ id: string; email: string | null }>;
}

export async function mergeContacts(
  workspaceId: string,
  primaryId: string,
  duplicateIds: string[],
): Promise<MergeOutcome> {
  const ids = [...new Set(duplicateIds)];
  if (ids.includes(primaryId)) {
    throw validationError("The primary contact cannot be one of its duplicates", [
      { field: "duplicateIds", message: "must not contain primaryId" },
    ]);
  }
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const rows = await sequelize.query<ContactRow>(
      `SELECT * FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE`,
      { bind: [workspaceId, [primaryId, ...ids]], type: QueryTypes.SELECT, transaction },
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    const primary = byId.get(primaryId);
    if (!primary || ids.some((id) => !byId.has(id))) throw notFound("Contact");
    const duplicates = ids.map((id) => byId.get(id)!);

    const present = await existingTables([...MOVABLE_TABLES, "segment_members"], transaction);
    for (const table of MOVABLE_TABLES) {
      if (!present.has(table)) continue;
      await sequelize.query(`UPDATE ${table} SET contact_id = $1 WHERE contact_id = ANY($2::text[])`, {
        bind: [primaryId, ids],
        transaction,
      });
    }
    if (present.has("segment_members")) {
      await sequelize.query(
        `INSERT INTO segment_members (segment_id, contact_id, entered_at)
         SELECT segment_id, $1, min(entered_at) FROM segment_members WHERE contact_id = ANY($2::text[]) GROUP BY segment_id
         ON CONFLICT DO NOTHING`,
        { bind: [primaryId, ids], transaction },
      );
      await sequelize.query(`DELETE FROM segment_members WHERE contact_id = ANY($1::text[])`, {
        bind: [ids],
        transaction,
      });
    }

    const removed = await sequelize.query<{ id: string; email: string | null }>(
      `DELETE FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[]) RETURNING id, email`,
      { bind: [workspaceId, ids], type: QueryTypes.SELECT, transaction },
    );

    const m = mergedProfile(primary, duplicates);
    try {
      const updated = await sequelize.query<ContactRow>(
        `UPDATE contacts SET email = $3, phone = $4, first_name = $5, last_name = $6, external_id = $7, locale = $8,
                timezone = $9, country = $10, city = $11, stage = $12, company_id = $13, owner_id = $14, tags = $15::text[],
                attributes = $16::jsonb, custom_fields = $17::jsonb, consent = $18::jsonb, score = $19, updated_at = now()
          WHERE workspace_id = $1 AND id = $2 RETURNING *`,
        {
          bind: [
            workspaceId,
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
          type: QueryTypes.SELECT,
          transaction,
        },
      );
      const contact = contactView(updated[0]);
      await stageDomainEvents(
        transaction,
        workspaceId,
        contactFacts({
          updated: [{ ...contact, changedFields: changedFields(primary, updated[0]) }],
          deleted: removed,
        }),
      );
      return { contact, removed };
    } catch (err) {
      rethrowUnique(err);
    }
  });
}
