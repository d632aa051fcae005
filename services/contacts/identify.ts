import type { ServiceBroker } from "moleculer";
import { validationError } from "../../lib/errors";
import { checkInput, loadDefs } from "./contact-write";
import { contactFields } from "./contacts.schemas";
import type { ContactInput } from "./fields";
import { writeBatch } from "./import";
import type { ConsentWanted } from "./upsert";

/**
 * The contact a visitor's own input names (a form submission): found by
 * email (else externalId) and updated, or created. Only fields with a value
 * are written, so a known field is never emptied by a blank answer; consent
 * asked for is written with `source` (only where its status changes).
 */
export async function identifyContact(
  broker: ServiceBroker,
  workspaceId: string,
  given: Record<string, unknown>,
  consent: ConsentWanted | undefined,
  source: string,
): Promise<{ contactId: string; created: boolean }> {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(contactFields)) {
    const value = given[key];
    if (value === undefined || value === null || (typeof value === "string" && !value.trim())) continue;
    input[key] = value;
  }
  const { write, issues } = checkInput(input as ContactInput, await loadDefs(workspaceId), { coerce: true });
  if (!issues.length && !write.email && !write.externalId && !write.phone)
    issues.push({ field: "email", message: "is needed to know who this is (or a phone)" });
  if (issues.length) throw validationError("The contact fields are invalid", issues);
  const [written] = await writeBatch(
    broker,
    workspaceId,
    [write],
    { actorType: "system", actorId: null, reason: source },
    [consent],
  );
  if (!written.row) throw validationError(`The contact cannot be written: ${written.error ?? "unknown"}`);
  return { contactId: written.row.id, created: written.row.inserted };
}
