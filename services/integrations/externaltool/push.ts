import type { LoggerInstance, ServiceBroker } from "moleculer";
import { fieldError } from "../../../lib/errors";
import { startJob } from "../../../lib/jobs";
import { systemCall } from "../../../lib/system-call";
import { MAX_CONCURRENT, type ExternalToolClient } from "./client";
import { memberOf, type PushedContact } from "./members";
import { externalTool } from "./settings";
import type { WorkspaceId } from "../../../lib/tenancy";

/**
 * `contacts`: our contacts pushed to the list as members (the member hash
 * upsert). Up to 1,000 (the ids given, or a segment that small) answer at
 * once `{pushed, failed}`; a larger segment runs as a job, paged by id.
 * A contact not found or without an email fails alone; a refused key or
 * an API out of reach stops the push.
 */

export const PUSH_LIMIT = 1000;
export const PUSH_JOB = "integrations.push";
/** A job's result keeps this many failures; its count stays exact. */
const MAX_REPORTED_FAILURES = 10_000;

export interface PushResult {
  pushed: number;
  failed: Array<{ contactId: string; error: string }>;
}

interface Request {
  contactIds?: string[];
  segmentId?: string;
  listId?: string;
  createdBy: string | null;
}

export async function pushContacts(
  broker: ServiceBroker,
  logger: LoggerInstance,
  workspaceId: WorkspaceId,
  request: Request,
): Promise<PushResult | { jobId: string }> {
  const { contactIds, segmentId } = request;
  if (!contactIds === !segmentId)
    throw fieldError("contactIds", "give either contactIds or segmentId (one of them)");
  const tool = await externalTool(workspaceId);
  const listId = tool.listId(request.listId);
  if (contactIds) return pushBatch(broker, workspaceId, tool.client, listId, contactIds);

  const segment = segmentId as string;
  const first = await memberIds(broker, workspaceId, segment, "", PUSH_LIMIT + 1);
  if (first.length <= PUSH_LIMIT) return pushBatch(broker, workspaceId, tool.client, listId, first);
  // A large push runs as a job: a refused key or a missing list answers now, not in the job.
  await tool.client.members(listId, 1, 0);
  const { jobId } = await startJob(
    // Each member upsert stands on its own: stopping halfway is safe.
    { workspaceId, type: PUSH_JOB, createdBy: request.createdBy, cancelPermission: "contacts.write" },
    async (progress) => {
      const result = { pushed: 0, failed: [] as PushResult["failed"], failedCount: 0 };
      let done = 0;
      for (let after = ""; ;) {
        const ids = await memberIds(broker, workspaceId, segment, after, PUSH_LIMIT);
        if (!ids.length) break;
        after = ids[ids.length - 1];
        const page = await pushBatch(broker, workspaceId, tool.client, listId, ids);
        result.pushed += page.pushed;
        result.failedCount += page.failed.length;
        result.failed.push(...page.failed.slice(0, MAX_REPORTED_FAILURES - result.failed.length));
        done += ids.length;
        await progress(done);
      }
      return result;
    },
    (err) => logger.error(`External tool push of segment ${segment} failed`, err),
  );
  return { jobId };
}

const memberIds = async (
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  segmentId: string,
  after: string,
  limit: number,
) =>
  (
    await systemCall<{ contactIds: string[] }>(broker, workspaceId, "segments.memberIds", {
      segmentId,
      after,
      limit,
    })
  ).contactIds;

/**
 * Push up to 1,000 contacts, in the order given. Workers take contacts one
 * by one (the API's limit bounds them too), and stop taking more once one
 * call fails as a whole, so a refused key is not tried a thousand times.
 */
async function pushBatch(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  client: ExternalToolClient,
  listId: string,
  contactIds: string[],
): Promise<PushResult> {
  const ids = [...new Set(contactIds)];
  const contacts = await systemCall<Array<PushedContact & { id: string }>>(
    broker,
    workspaceId,
    "contacts.forSend",
    { contactIds: ids },
  );
  const byId = new Map(contacts.map((c) => [c.id, c]));
  const outcomes: Array<string | null> = new Array(ids.length);
  let next = 0;
  let stopped: unknown = null;
  const worker = async () => {
    while (stopped === null && next < ids.length) {
      const at = next++;
      const contact = byId.get(ids[at]);
      const member = contact && memberOf(contact);
      if (!contact) outcomes[at] = "contact not found";
      else if (!member) outcomes[at] = "contact has no email";
      else {
        try {
          const answer = await client.upsertMember(listId, member);
          outcomes[at] = answer.ok ? null : answer.error;
        } catch (err) {
          stopped ??= err;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(MAX_CONCURRENT, ids.length) }, worker));
  if (stopped !== null) throw stopped;
  return {
    pushed: outcomes.filter((o) => o === null).length,
    failed: ids.flatMap((contactId, at) =>
      outcomes[at] === null ? [] : [{ contactId, error: outcomes[at] as string }],
    ),
  };
}
