import { database } from "../../lib/database";
import { notFound, validationError } from "../../lib/errors";
import { stageDomainEvents } from "../../lib/outbox";
import type { ConsentEntry } from "../../models";
import {
  contactView,
  deleteContacts,
  rethrowUnique,
  type ContactRow,
  type ContactView,
} from "./contacts.repo";
import { changedFields } from "./fields";
import { contactFacts } from "./effects";
import { lockContacts, moveRelatedRows, writeMergedProfile } from "./merge.repo";
import type { WorkspaceId } from "../../lib/tenancy";

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
  workspaceId: WorkspaceId,
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
    const rows = await lockContacts(workspaceId, [primaryId, ...ids], transaction);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const primary = byId.get(primaryId);
    if (!primary || ids.some((id) => !byId.has(id))) throw notFound("Contact");
    const duplicates = ids.map((id) => byId.get(id)!);

    await moveRelatedRows(primaryId, ids, transaction);
    const removed = await deleteContacts(workspaceId, ids, transaction);

    const m = mergedProfile(primary, duplicates);
    try {
      const updated = await writeMergedProfile(workspaceId, primaryId, m, transaction);
      const contact = contactView(updated);
      await stageDomainEvents(
        transaction,
        workspaceId,
        contactFacts({
          updated: [{ ...contact, changedFields: changedFields(primary, updated) }],
          deleted: removed,
        }),
      );
      return { contact, removed };
    } catch (err) {
      rethrowUnique(err);
    }
  });
}
