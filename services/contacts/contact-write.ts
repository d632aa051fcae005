import type { ServiceBroker } from "moleculer";
import { MicroBatcher } from "../../lib/batcher";
import { database } from "../../lib/database";
import type { FieldIssue } from "../../lib/errors";
import { stageDomainEvents } from "../../lib/outbox";
import { found } from "../../lib/errors";
import { checkCustomFields, missingRequired, type CustomFieldDef } from "./custom-fields";
import {
  addressValue,
  assertNoIssues,
  contactByAddress,
  contactsByAddresses,
  contactView,
  deleteContacts,
  getRow,
  insertContact,
  insertContacts,
  lockAddresses,
  recordStageChange,
  updateColumns,
  writeDefinitions,
  type AddressType,
  type ContactRow,
  type ContactView,
  type WorkspaceDefs,
} from "./contacts.repo";
import { contactFacts, evaluateSegments } from "./effects";
import { assertReferences, referenceIssues } from "./references";
import { changedFields, type ContactInput, type ContactWrite } from "./fields";
import { hasIdentity, mergeObject, normalizeContactInput } from "./normalize";
import { upsertMany, type ConsentWanted, type UpsertedRow } from "./upsert";
import { customFieldsByKey, type UpsertOrigin } from "./upsert.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The one contact-write path. Every write of a contact's fields (the API's
 * create and update, a stage move, CSV import, ingest, identify for forms
 * and inbound webhooks) is checked by `checkInput` against the workspace's
 * definitions (custom fields, stages), references (company, owner) are
 * checked, the write's facts are staged in its transaction (`contact.created`
 * / `contact.updated`, opt-outs), and the segments of the contacts written
 * are re-evaluated after it. One contact: `createContact`, `updateContact`;
 * many, upserted by key: `writeContacts`.
 */

/**
 * Normalise and check an input; returns the write and the issues (each naming
 * its field). `coerce` accepts text forms of typed custom field values (CSV).
 */
export function checkInput(
  input: ContactInput,
  defs: WorkspaceDefs,
  options: { coerce?: boolean; defaultCountry?: string } = {},
): { write: ContactWrite; issues: FieldIssue[] } {
  const { write, issues } = normalizeContactInput(input, options);
  if (write.customFields) {
    const checked = checkCustomFields(defs.customFields, write.customFields, options.coerce);
    issues.push(...checked.issues);
    write.customFields = checked.values;
  }
  if (write.stage && !defs.stages.has(write.stage)) {
    issues.push({
      field: "stage",
      message: `must be one of the workspace's lifecycle stages (${[...defs.stages].join(", ")})`,
    });
  }
  return { write, issues };
}

const IDENTITY_NEEDED =
  "a contact needs at least one of email, phone, externalId (or attributes.chatapp1ChatId, a chat with the bot)";

/** Nulls in a create mean "no value": drop them from JSON objects. */
function withoutNulls(obj: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  return obj && mergeObject({}, obj);
}

export function createIssues(write: ContactWrite, defs: WorkspaceDefs): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (!hasIdentity(write)) {
    issues.push({ field: "email", message: IDENTITY_NEEDED });
  }
  issues.push(...missingRequired(defs.customFields, write.customFields ?? {}));
  return issues;
}

export async function createContact(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  input: ContactInput,
): Promise<ContactView> {
  return (await insertOnce(broker, workspaceId, input)).contact;
}

/**
 * The contact an address (an inbound message's sender) belongs to, else a
 * new one with it (and `input`'s other fields). The create takes the
 * address's lock and looks again in its transaction, so first messages
 * from one address arriving together (on any replica) make one contact.
 */
export async function contactForAddress(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  address: { type: AddressType; value: string },
  input: ContactInput,
): Promise<{ contact: ContactView; created: boolean }> {
  const known = await contactByAddress(workspaceId, address.type, address.value);
  if (known) return { contact: known, created: false };
  return addressCreator.add({ broker, workspaceId, address, input });
}

/**
 * The batch form of `contactForAddress` (an inbound batch's senders): one
 * look-up statement per kind of address for the whole batch, then the
 * addresses still missing made together (`createForAddresses`: their locks,
 * a second look, one insert), so a new sender is created once however many
 * of its messages the batch holds. Answers per ask, in order; an invalid
 * input fails the whole call (the caller files its messages one by one).
 */
export async function contactsForAddresses(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  asks: Array<{ address: { type: AddressType; value: string }; input: ContactInput }>,
): Promise<Array<{ contact: ContactView; created: boolean }>> {
  const outcomes: Array<{ contact: ContactView; created: boolean }> = new Array(asks.length);
  const byType = new Map<AddressType, number[]>();
  asks.forEach((ask, at) => byType.set(ask.address.type, [...(byType.get(ask.address.type) ?? []), at]));
  for (const [type, ats] of byType) {
    const keyOf = (value: string) => addressValue(type, value) ?? value;
    const known = await contactsByAddresses(
      workspaceId,
      type,
      ats.map((at) => asks[at].address.value),
    );
    const missing: number[] = [];
    for (const at of ats) {
      const contact = known.get(keyOf(asks[at].address.value));
      if (contact) outcomes[at] = { contact, created: false };
      else missing.push(at);
    }
    if (!missing.length) continue;
    const made = await createForAddresses(missing.map((at) => ({ broker, workspaceId, ...asks[at] })));
    missing.forEach((at, n) => (outcomes[at] = made[n]));
  }
  return outcomes;
}

/** Create a contact. */
async function insertOnce(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  input: ContactInput,
): Promise<{ contact: ContactView; created: boolean }> {
  const defs = await writeDefinitions(workspaceId);
  const write = creatable(input, defs);
  await assertReferences(broker, workspaceId, write);
  const sequelize = await database();
  const created = await sequelize.transaction(async (transaction) => {
    const contact = contactView(await insertContact(workspaceId, write, transaction));
    await stageDomainEvents(transaction, workspaceId, contactFacts({ created: [contact] }));
    return contact;
  });
  await evaluateSegments(broker, workspaceId, [created.id]);
  return { contact: created, created: true };
}

/** A new contact's write from its input, checked (400 naming the field). */
function creatable(input: ContactInput, defs: WorkspaceDefs): ContactWrite {
  const { write, issues } = checkInput(input, defs);
  write.attributes = withoutNulls(write.attributes);
  write.customFields = withoutNulls(write.customFields);
  assertNoIssues([...issues, ...createIssues(write, defs)]);
  return write;
}

/** A contact asked for an address no contact had when looked up. */
interface AddressCreate {
  broker: ServiceBroker;
  workspaceId: WorkspaceId;
  address: { type: AddressType; value: string };
  input: ContactInput;
}

/**
 * Contacts for new addresses (the first messages of new chats, say) that
 * arrive together are made together, per workspace and kind of address: one
 * read of the definitions, then one transaction that locks their addresses,
 * looks them up again, inserts those still missing and stages their facts,
 * a statement each; then one segment evaluation. One contact per address
 * however many of its first messages arrive together (on any replica). A
 * batch that fails is made again ask by ask (lib/batcher.ts), so one
 * invalid input fails only its own message.
 */
const addressCreator = new MicroBatcher(
  async (asks: AddressCreate[]): Promise<Array<{ contact: ContactView; created: boolean }>> => {
    const groups = new Map<string, number[]>();
    const brokers: ServiceBroker[] = [];
    asks.forEach((ask, at) => {
      if (!brokers.includes(ask.broker)) brokers.push(ask.broker);
      const key = `${brokers.indexOf(ask.broker)}\n${ask.workspaceId}\n${ask.address.type}`;
      groups.set(key, [...(groups.get(key) ?? []), at]);
    });
    const outcomes: Array<{ contact: ContactView; created: boolean }> = new Array(asks.length);
    for (const ats of groups.values()) {
      const answers = await createForAddresses(ats.map((at) => asks[at]));
      ats.forEach((at, n) => (outcomes[at] = answers[n]));
    }
    return outcomes;
  },
  { maxBatch: 100, lanes: 1 },
);

/** One group of `addressCreator` (one broker, workspace and kind of address). */
async function createForAddresses(
  asks: AddressCreate[],
): Promise<Array<{ contact: ContactView; created: boolean }>> {
  const { broker, workspaceId } = asks[0];
  const { type } = asks[0].address;
  const defs = await writeDefinitions(workspaceId);
  const writes = asks.map((ask) => creatable(ask.input, defs));
  for (const write of writes) await assertReferences(broker, workspaceId, write);
  const values = asks.map((ask) => ask.address.value);
  const keyOf = (value: string) => addressValue(type, value) ?? value;
  const sequelize = await database();
  const { known, created } = await sequelize.transaction(async (transaction) => {
    await lockAddresses(workspaceId, type, values, transaction);
    const found = await contactsByAddresses(workspaceId, type, values, transaction);
    // The first ask of each address still missing makes its contact; the others of that address find it.
    const missing = new Map<string, ContactWrite>();
    asks.forEach((ask, i) => {
      const key = keyOf(ask.address.value);
      if (!found.has(key) && !missing.has(key)) missing.set(key, writes[i]);
    });
    const rows = await insertContacts(workspaceId, [...missing.values()], transaction);
    const made = new Map([...missing.keys()].map((key, i) => [key, contactView(rows[i])]));
    if (made.size)
      await stageDomainEvents(transaction, workspaceId, contactFacts({ created: [...made.values()] }));
    return { known: found, created: made };
  });
  await evaluateSegments(
    broker,
    workspaceId,
    [...created.values()].map((c) => c.id),
  );
  const answered = new Set<string>();
  return asks.map((ask) => {
    const key = keyOf(ask.address.value);
    const contact = known.get(key) ?? created.get(key)!;
    const first = !known.has(key) && !answered.has(key);
    answered.add(key);
    return { contact, created: first };
  });
}

export interface UpdateResult {
  before: ContactRow;
  after: ContactView;
  stageChanged: boolean;
}

/**
 * Apply a PATCH: attributes/customFields merge key by key (null removes), tags
 * replace. A stage `move` (POST .../stages) gives its history row a reason, and
 * a move to the stage the contact is in announces no `contact.updated` and
 * evaluates no segments.
 */
export async function updateContact(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  id: string,
  input: ContactInput,
  actor: { actorType: string; actorId: string | null },
  move?: { reason: string | null },
): Promise<UpdateResult> {
  const defs = await writeDefinitions(workspaceId);
  const { write, issues } = checkInput(input, defs);
  assertNoIssues(issues);
  await assertReferences(broker, workspaceId, write);
  const sequelize = await database();
  const result = await sequelize.transaction(async (transaction) => {
    const before = found(await getRow(workspaceId, id, transaction, true), "Contact");
    if (write.attributes) write.attributes = mergeObject(before.attributes ?? {}, write.attributes);
    if (write.customFields) write.customFields = mergeObject(before.custom_fields ?? {}, write.customFields);
    const identity = {
      email: write.email !== undefined ? write.email : before.email,
      phone: write.phone !== undefined ? write.phone : before.phone,
      externalId: write.externalId !== undefined ? write.externalId : before.external_id,
      attributes: write.attributes ?? before.attributes,
    };
    const more: FieldIssue[] = [];
    if (!hasIdentity(identity)) more.push({ field: "email", message: IDENTITY_NEEDED });
    if (write.customFields) more.push(...missingRequired(defs.customFields, write.customFields));
    assertNoIssues(more);
    const row = found(await updateColumns(workspaceId, id, write, transaction), "Contact");
    const stageChanged = write.stage !== undefined && write.stage !== before.stage;
    if (stageChanged)
      await recordStageChange(
        workspaceId,
        id,
        before.stage,
        row.stage,
        actor,
        move?.reason ?? null,
        transaction,
      );
    const after = contactView(row);
    if (!move || stageChanged)
      await stageDomainEvents(
        transaction,
        workspaceId,
        contactFacts({ updated: [{ ...after, changedFields: changedFields(before, row) }] }),
      );
    return { before, after, stageChanged };
  });
  if (!move || result.stageChanged) await evaluateSegments(broker, workspaceId, [result.after.id]);
  return result;
}

/**
 * The required custom fields of each batch row, as the single path asks them:
 * a row that creates a contact (its key matches none) carries them all; a row
 * that updates one and writes custom fields may not leave one empty. Nulls in
 * a batch row mean "no value" (they never remove a stored value).
 */
async function requiredIssues(
  workspaceId: WorkspaceId,
  fields: CustomFieldDef[],
  writes: ContactWrite[],
): Promise<FieldIssue[][]> {
  if (!fields.some((d) => d.required)) return writes.map(() => []);
  // The upsert's keys: email when the row has one, else externalId.
  const emails = writes.flatMap((w) => (w.email ? [w.email] : []));
  const externalIds = writes.flatMap((w) => (!w.email && w.externalId ? [w.externalId] : []));
  const stored = await customFieldsByKey(workspaceId, emails, externalIds);
  const byEmail = new Map(stored.flatMap((c) => (c.email ? [[c.email, c.customFields] as const] : [])));
  const byExternalId = new Map(
    stored.flatMap((c) => (c.externalId ? [[c.externalId, c.customFields] as const] : [])),
  );
  return writes.map((w) => {
    const before = w.email ? byEmail.get(w.email) : w.externalId ? byExternalId.get(w.externalId) : undefined;
    if (before && !w.customFields) return [];
    return missingRequired(fields, mergeObject(before ?? {}, mergeObject({}, w.customFields ?? {})));
  });
}

/** A row's issues as its error text. */
export const issueText = (issues: FieldIssue[]) => issues.map((i) => `${i.field} ${i.message}`).join("; ");

/**
 * The batch write (CSV import, ingest, identify): checked writes upserted by
 * email, else externalId (with the consent each asks for, `consent[i]`; the
 * upsert stages its facts, opt-outs as `unsubscribe.<channel>` with the
 * origin's reason as source), then the segments of the rows written are
 * re-evaluated; answers the row written or the error, per write. `fields`:
 * the custom field definitions whose required ones each row must satisfy.
 */
export async function writeContacts(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  fields: CustomFieldDef[],
  writes: ContactWrite[],
  origin: UpsertOrigin,
  consent: Array<ConsentWanted | undefined> = [],
): Promise<Array<{ row?: UpsertedRow; error?: string }>> {
  // A row naming another workspace's company or a non-member owner, or missing a required field, fails alone; the others are written.
  const [references, required] = await Promise.all([
    referenceIssues(broker, workspaceId, writes),
    requiredIssues(workspaceId, fields, writes),
  ]);
  const issues = writes.map((_, i) => [...(references[i] ? [references[i]] : []), ...required[i]]);
  const accepted = writes.flatMap((write, i) => (issues[i].length ? [] : [{ write, consent: consent[i] }]));
  const written = await upsertMany(
    workspaceId,
    accepted.map((a) => a.write),
    origin,
    accepted.map((a) => a.consent),
  );
  let next = 0;
  const results = issues.map((rowIssues) =>
    rowIssues.length ? { error: issueText(rowIssues) } : written[next++],
  );
  await evaluateSegments(
    broker,
    workspaceId,
    results.flatMap((r) => (r.row ? [r.row.id] : [])),
  );
  return results;
}

/** Delete contacts (what hangs off them cascades); answers those that existed. */
export async function removeContacts(
  workspaceId: WorkspaceId,
  ids: string[],
): Promise<Array<{ id: string; email: string | null }>> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const deleted = await deleteContacts(workspaceId, ids, transaction);
    await stageDomainEvents(transaction, workspaceId, contactFacts({ deleted }));
    return deleted;
  });
}
