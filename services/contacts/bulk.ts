import type { LoggerInstance, ServiceBroker } from "moleculer";
import { database } from "../../lib/database";
import { fieldError, validationError } from "../../lib/errors";
import { startJob } from "../../lib/jobs";
import { stageDomainEvents } from "../../lib/outbox";
import { removeContacts } from "./contact-write";
import { idsMatching, type ContactFilter } from "./contact-search.repo";
import { stageKeys } from "./contacts.repo";
import { updateInBulk, type BulkAction, type BulkValue } from "./bulk.repo";
import { contactFacts, evaluateSegments } from "./effects";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Bulk changes over a set of contact ids (one statement per batch). `affected`
 * counts the contacts actually changed; each gets its `contact.updated` (or
 * `contact.deleted`) fact, staged in the batch's transaction.
 */

/** Check `value` for the action (400 naming `value`) and return its normalised form. */
export async function checkBulkValue(
  workspaceId: WorkspaceId,
  action: BulkAction,
  value: unknown,
): Promise<BulkValue> {
  switch (action) {
    case "tag":
    case "untag":
      if (typeof value !== "string" || !value.trim() || value.length > 100)
        throw fieldError("value", "must be a tag (1-100 characters)");
      return { tag: value.trim() };
    case "setStage":
      if (value === null) return { stage: null };
      if (typeof value !== "string" || !(await stageKeys(workspaceId)).has(value)) {
        throw fieldError("value", "must be one of the workspace's lifecycle stages, or null");
      }
      return { stage: value };
    case "setAttribute": {
      const v = value as { key?: unknown; value?: unknown } | null;
      if (
        !v ||
        typeof v !== "object" ||
        typeof v.key !== "string" ||
        !v.key ||
        v.key.length > 100 ||
        v.key.includes(".") ||
        !("value" in v)
      ) {
        throw fieldError("value", "must be {key, value} (value null removes the key)");
      }
      return { key: v.key, value: v.value };
    }
    case "delete":
      return {};
  }
}

export async function applyBulk(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  action: BulkAction,
  value: BulkValue,
  ids: string[],
  actor: { actorType: string; actorId: string | null },
): Promise<number> {
  if (!ids.length) return 0;
  if (action === "delete") {
    return (await removeContacts(workspaceId, ids)).length;
  }
  const sequelize = await database();
  const rows = await sequelize.transaction(async (transaction) => {
    const { field, changed } = await updateInBulk(workspaceId, action, value, ids, actor, transaction);
    const updated = changed.map((r) => ({
      id: r.id,
      email: r.email,
      firstName: r.first_name,
      lastName: r.last_name,
      changedFields: [field],
    }));
    await stageDomainEvents(transaction, workspaceId, contactFacts({ updated }));
    return changed;
  });
  await evaluateSegments(
    broker,
    workspaceId,
    rows.map((r) => r.id),
  );
  return rows.length;
}

/** Bulk sets up to this size run in the request; larger ones (and filters) run as a job. */
export const BULK_INLINE_MAX = 1000;

function* chunks<T>(items: T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/**
 * `POST {ws}/contacts/bulk`: exactly one of `ids` and `filter`; up to
 * BULK_INLINE_MAX ids change in the request (`{affected}`), more ids or a
 * filter run as a job (`{jobId}`, answered with 202).
 */
export async function runBulk(
  broker: ServiceBroker,
  logger: LoggerInstance,
  workspaceId: WorkspaceId,
  request: { action: BulkAction; ids?: string[]; filter?: ContactFilter; value?: unknown },
  actor: { actorType: string; actorId: string | null },
): Promise<{ affected: number } | { jobId: string }> {
  const { action, ids, filter } = request;
  if ((ids === undefined) === (filter === undefined)) {
    throw validationError("Give either ids or filter", [
      { field: "ids", message: "exactly one of ids and filter is required" },
    ]);
  }
  const value = await checkBulkValue(workspaceId, action, request.value);
  const unique = ids ? [...new Set<string>(ids)] : undefined;
  if (unique && unique.length <= BULK_INLINE_MAX) {
    return { affected: await applyBulk(broker, workspaceId, action, value, unique, actor) };
  }
  const { jobId } = await startJob(
    { workspaceId, type: "contacts.bulk", createdBy: actor.actorId, total: ids?.length },
    async (progress) => {
      let affected = 0;
      let done = 0;
      const batches = unique
        ? chunks(unique, BULK_INLINE_MAX)
        : idsMatching(workspaceId, filter!, BULK_INLINE_MAX);
      for await (const batch of batches) {
        affected += await applyBulk(broker, workspaceId, action, value, batch, actor);
        done += batch.length;
        await progress(done);
      }
      return { action, affected };
    },
    (err) => logger.error("Bulk contact change failed", err),
  );
  return { jobId };
}
