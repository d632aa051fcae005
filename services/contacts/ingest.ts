import type { ServiceBroker } from "moleculer";
import { checkInput, issueText, writeContacts } from "./contact-write";
import { writeDefinitions } from "./contacts.repo";
import { contactFields } from "./contacts.schemas";
import type { ContactInput, ContactWrite } from "./fields";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Ingest: up to 1,000 contacts upserted by email (else externalId) in one call.
 * `emailOptOut: true` opts the email channel out with source "ingest" and
 * emits `unsubscribe.email` when the contact was not opted out already.
 */

export interface IngestResult {
  created: number;
  updated: number;
  failed: Array<{ index: number; error: string }>;
}

export async function ingestContacts(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  items: unknown[],
  actor: { actorType: string; actorId: string | null },
): Promise<IngestResult> {
  const defs = await writeDefinitions(workspaceId);
  const result: IngestResult = { created: 0, updated: 0, failed: [] };
  const valid: Array<{ index: number; write: ContactWrite; optOut: boolean }> = [];
  items.forEach((item, index) => {
    if (!item || typeof item !== "object" || Array.isArray(item)) {
      result.failed.push({ index, error: "must be an object" });
      return;
    }
    const raw = item as Record<string, unknown>;
    const input: Record<string, unknown> = {};
    for (const key of Object.keys(contactFields)) if (raw[key] !== undefined) input[key] = raw[key];
    const { write, issues } = checkInput(input as ContactInput, defs);
    if (!issues.length && !write.email && !write.externalId)
      issues.push({ field: "email", message: "each contact needs an email or an externalId" });
    if (raw.emailOptOut !== undefined && typeof raw.emailOptOut !== "boolean")
      issues.push({ field: "emailOptOut", message: "must be a boolean" });
    if (issues.length) result.failed.push({ index, error: issueText(issues) });
    else valid.push({ index, write, optOut: raw.emailOptOut === true });
  });

  // The opt-out is written by the upsert itself (only when the status changes), with "ingest" as its source.
  const written = await writeContacts(
    broker,
    workspaceId,
    defs.customFields,
    valid.map((v) => v.write),
    { ...actor, reason: "ingest" },
    valid.map((v) => (v.optOut ? { email: "opted_out" } : undefined)),
  );
  for (const [n, r] of written.entries()) {
    if (!r.row) result.failed.push({ index: valid[n].index, error: r.error ?? "not written" });
    else if (r.row.inserted) result.created += 1;
    else result.updated += 1;
  }
  result.failed.sort((a, b) => a.index - b.index);
  return result;
}
