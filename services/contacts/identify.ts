import type { ServiceBroker } from "moleculer";
import { MicroBatcher } from "../../lib/batcher";
import { validationError, type FieldIssue } from "../../lib/errors";
import { checkInput, writeContacts } from "./contact-write";
import { writeDefinitions } from "./contacts.repo";
import { contactFields } from "./contacts.schemas";
import type { ContactInput, ContactWrite } from "./fields";
import type { ConsentWanted } from "./upsert";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The contact a visitor's own input names (a form submission): found by
 * email (else externalId) and updated, or created. Only fields with a value
 * are written, so a known field is never emptied by a blank answer; consent
 * asked for is written with `source` (only where its status changes).
 *
 * Concurrent visitors go together (lib/batcher.ts): one read of the
 * workspace's definitions and one upsert statement for all of them, the way
 * an import writes its rows; each still gets its own answer or its own 400.
 */
export async function identifyContact(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  given: Record<string, unknown>,
  consent: ConsentWanted | undefined,
  source: string,
): Promise<{ contactId: string; created: boolean }> {
  const outcome = await identifier.add({ broker, workspaceId, given, consent, source });
  if ("issues" in outcome) throw validationError("The contact fields are invalid", outcome.issues);
  if ("error" in outcome) throw validationError(`The contact cannot be written: ${outcome.error}`);
  return outcome;
}

interface Wanted {
  broker: ServiceBroker;
  workspaceId: WorkspaceId;
  given: Record<string, unknown>;
  consent: ConsentWanted | undefined;
  source: string;
}

type Outcome = { contactId: string; created: boolean } | { issues: FieldIssue[] } | { error: string };

/** The fields of `given` that have a value. */
function present(given: Record<string, unknown>): ContactInput {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(contactFields)) {
    const value = given[key];
    if (value === undefined || value === null || (typeof value === "string" && !value.trim())) continue;
    input[key] = value;
  }
  return input as ContactInput;
}

/** One group's writes: items of one broker, workspace and source. */
async function identifyGroup(items: Wanted[]): Promise<Outcome[]> {
  const { broker, workspaceId, source } = items[0];
  const defs = await writeDefinitions(workspaceId);
  const outcomes: Outcome[] = new Array(items.length);
  const valid: Array<{ at: number; write: ContactWrite; consent: ConsentWanted | undefined }> = [];
  items.forEach((item, at) => {
    const { write, issues } = checkInput(present(item.given), defs, { coerce: true });
    if (!issues.length && !write.email && !write.externalId && !write.phone)
      issues.push({ field: "email", message: "is needed to know who this is (or a phone)" });
    if (issues.length) outcomes[at] = { issues };
    else valid.push({ at, write, consent: item.consent });
  });
  const written = await writeContacts(
    broker,
    workspaceId,
    // What a person sent (a form, an inbound message) is never refused for a field only the workspace's people fill.
    [],
    valid.map((v) => v.write),
    { actorType: "system", actorId: null, reason: source },
    valid.map((v) => v.consent),
  );
  valid.forEach(({ at }, n) => {
    const { row, error } = written[n];
    outcomes[at] = row ? { contactId: row.id, created: row.inserted } : { error: error ?? "unknown" };
  });
  return outcomes;
}

const identifier = new MicroBatcher(
  async (items: Wanted[]): Promise<Outcome[]> => {
    const groups = new Map<string, number[]>();
    const brokers: ServiceBroker[] = [];
    items.forEach((item, at) => {
      if (!brokers.includes(item.broker)) brokers.push(item.broker);
      const key = `${brokers.indexOf(item.broker)}\n${item.workspaceId}\n${item.source}`;
      groups.set(key, [...(groups.get(key) ?? []), at]);
    });
    const outcomes: Outcome[] = new Array(items.length);
    for (const ats of groups.values()) {
      const answers = await identifyGroup(ats.map((at) => items[at]));
      ats.forEach((at, n) => (outcomes[at] = answers[n]));
    }
    return outcomes;
  },
  { maxBatch: 200, lanes: 1 },
);
