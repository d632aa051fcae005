import { newId } from "../../lib/crypto";
import { database, dataException, uniqueViolation } from "../../lib/database";
import { stageDomainEvents } from "../../lib/outbox";
import type { ConsentChannel } from "../../lib/channels";
import type { ConsentEntry } from "../../models";
import { applyConsent } from "./consent";
import { contactFacts, optOutFact } from "./effects";
import { changedFields, recordOf, type ContactWrite } from "./fields";
import { mergeObject } from "./normalize";
import { upsertRecords, type Returned, type UpsertOrigin } from "./upsert.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Update-or-create many contacts in one statement per key: by email when the
 * row has one, else by externalId, else a plain insert. On an update, given
 * fields replace, absent ones stay, attributes/customFields merge key by key
 * and tags are added. Consent a row asks for is written in the same statement
 * (a second pass would rewrite every row and its indexes), only on channels
 * whose status it changes, with the origin's reason as its source. Each
 * statement's facts (`contact.created`/`contact.updated`, `unsubscribe.<channel>`)
 * are staged in its transaction. A batch that fails as a whole (the same email
 * twice, an externalId owned by another contact) is retried row by row so each
 * row gets its own answer.
 */

/** Consent a write asks for: a status per channel; absent channels stay as they are. */
export type ConsentWanted = Partial<Record<ConsentChannel, "opted_in" | "opted_out">>;

export interface UpsertedRow {
  id: string;
  email: string | null;
  firstName: string | null;
  lastName: string | null;
  externalId: string | null;
  consent: Record<string, ConsentEntry>;
  inserted: boolean;
  /** Channels this write opted out (their status changed), for `unsubscribe.<channel>`. */
  optOuts: string[];
  /** The fields an update changed (fields.ts changedFields); none for an insert. */
  changedFields: string[];
}

export type UpsertResult = { row: UpsertedRow; error?: undefined } | { row?: undefined; error: string };

/** The consent entries a wish writes (as the consent API would set them) and the opt-outs among them. */
function consentEntries(wanted: ConsentWanted | undefined, source: string, now: Date) {
  let consent: Record<string, ConsentEntry> = {};
  const optOuts: string[] = [];
  for (const [channel, status] of Object.entries(wanted ?? {}) as Array<
    [ConsentChannel, "opted_in" | "opted_out"]
  >) {
    const next = applyConsent(consent, channel, status, source, now);
    consent = next.consent;
    optOuts.push(...next.optOuts);
  }
  return { consent, optOuts };
}

/** The row a write stores; nulls in its JSON objects mean "no value", as in a create. */
function record(write: ContactWrite, consent: Record<string, ConsentEntry>) {
  return { id: newId(), ...recordOf(write, (obj) => mergeObject({}, obj ?? {})), consent };
}

/** The returned row, with the opt-outs of `sent` that changed a status. */
const toRow = (r: Returned, sent: ReturnType<typeof consentEntries>): UpsertedRow => ({
  id: r.id,
  email: r.email,
  firstName: r.first_name,
  lastName: r.last_name,
  externalId: r.external_id,
  consent: r.consent ?? {},
  inserted: r.inserted,
  optOuts: sent.optOuts.filter((channel) => r.previous_consent?.[channel]?.status !== "opted_out"),
  changedFields: r.inserted || !r.doc ? [] : changedFields(r.previous_doc ?? {}, r.doc),
});

/** A row's own failure as its answer; anything else (the database gone) fails the whole call. */
function errorText(err: unknown): string {
  const constraint = uniqueViolation(err);
  if (constraint === "contacts_email_uq") return "email belongs to another contact";
  if (constraint === "contacts_external_id_uq") return "externalId belongs to another contact";
  const invalid = dataException(err);
  if (invalid) return `a value cannot be stored: ${invalid}`;
  throw err;
}

/** One statement and its facts in one transaction; the written row of each record, in record order. */
async function run(
  workspaceId: WorkspaceId,
  conflict: "email" | "external_id" | null,
  records: ReturnType<typeof record>[],
  entries: ReturnType<typeof consentEntries>[],
  origin: UpsertOrigin,
): Promise<Array<UpsertedRow | undefined>> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const rows = await upsertRecords(workspaceId, conflict, records, origin, transaction);
    // RETURNING keeps no input order: match rows back by id (inserted) or by key (updated).
    const byId = new Map(rows.map((r) => [r.id, r]));
    const byKey = new Map(rows.map((r) => [conflict === "email" ? r.email : r.external_id, r]));
    const written = records.map((rec, n) => {
      const hit =
        byId.get(rec.id) ??
        (conflict ? byKey.get(conflict === "email" ? rec.email : rec.external_id) : undefined);
      return hit && toRow(hit, entries[n]);
    });
    const done = written.filter((r) => r !== undefined);
    await stageDomainEvents(transaction, workspaceId, [
      ...contactFacts({ created: done.filter((r) => r.inserted), updated: done.filter((r) => !r.inserted) }),
      ...done.flatMap((r) => r.optOuts.map((channel) => optOutFact(r, channel, origin.reason))),
    ]);
    return written;
  });
}

/** Upsert validated writes (with the consent each asks for, `consent[i]`); results are in input order. */
export async function upsertMany(
  workspaceId: WorkspaceId,
  writes: ContactWrite[],
  origin: UpsertOrigin,
  consent: Array<ConsentWanted | undefined> = [],
): Promise<UpsertResult[]> {
  const results: UpsertResult[] = new Array(writes.length);
  const now = new Date();
  const groups: Record<"email" | "external_id" | "none", number[]> = { email: [], external_id: [], none: [] };
  writes.forEach((w, i) => groups[w.email ? "email" : w.externalId ? "external_id" : "none"].push(i));

  for (const [key, indexes] of Object.entries(groups) as Array<
    ["email" | "external_id" | "none", number[]]
  >) {
    if (!indexes.length) continue;
    const conflict = key === "none" ? null : key;
    const entries = indexes.map((i) => consentEntries(consent[i], origin.reason, now));
    const records = indexes.map((i, n) => record(writes[i], entries[n].consent));
    try {
      const written = await run(workspaceId, conflict, records, entries, origin);
      indexes.forEach((i, n) => {
        const row = written[n];
        results[i] = row ? { row } : { error: "not written" };
      });
    } catch (err) {
      if (indexes.length === 1) {
        results[indexes[0]] = { error: errorText(err) };
        continue;
      }
      for (const [n, i] of indexes.entries()) {
        try {
          const [row] = await run(workspaceId, conflict, [records[n]], [entries[n]], origin);
          results[i] = row ? { row } : { error: "not written" };
        } catch (rowErr) {
          results[i] = { error: errorText(rowErr) };
        }
      }
    }
  }
  return results;
}
