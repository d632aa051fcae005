import type { LoggerInstance, ServiceBroker } from "moleculer";
import { startJob, type ProgressFn } from "../../../lib/jobs";
import { systemCall } from "../../../lib/system-call";
import { MAX_PAGE, type ExternalToolClient, type MembersPage } from "./client";
import { contactOf, type RemoteMember } from "./members";
import { externalTool } from "./settings";
import type { WorkspaceId } from "../../../lib/tenancy";

/**
 * `import`: every member of the list, page after page (the next page read
 * while this one is written), upserted by email through the contacts
 * area's one write of a contact from outside input (`contacts.identify`,
 * source `import`). The first page is read before the job starts, so bad
 * credentials or an API out of reach answer the request itself. The job's
 * result is `{created, updated, skipped}`; a second run creates nothing.
 */

export interface ImportResult {
  created: number;
  updated: number;
  skipped: number;
}

export const IMPORT_JOB = "integrations.import";

export async function startMembersImport(
  broker: ServiceBroker,
  logger: LoggerInstance,
  workspaceId: WorkspaceId,
  request: { listId?: string; tags?: string[]; createdBy: string | null },
): Promise<{ jobId: string }> {
  const tool = await externalTool(workspaceId);
  const listId = tool.listId(request.listId);
  const first = await tool.client.members(listId, MAX_PAGE, 0);
  const { jobId } = await startJob(
    // Each page stands on its own and a rerun updates what was written: stopping halfway is safe.
    {
      workspaceId,
      type: IMPORT_JOB,
      createdBy: request.createdBy,
      total: first.total,
      cancelPermission: "contacts.write",
    },
    (progress) =>
      importMembers(broker, workspaceId, tool.client, listId, request.tags ?? [], first, progress),
    (err) => logger.error(`External tool import of list ${listId} failed`, err),
  );
  return { jobId };
}

async function importMembers(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  client: ExternalToolClient,
  listId: string,
  tags: string[],
  first: MembersPage,
  progress: ProgressFn,
): Promise<ImportResult> {
  const result: ImportResult = { created: 0, updated: 0, skipped: 0 };
  let page = first;
  let offset = 0;
  let done = 0;
  while (page.received) {
    const nextOffset = offset + page.received;
    const next = nextOffset < page.total ? client.members(listId, MAX_PAGE, nextOffset) : null;
    // Awaited below; this only keeps a failure meanwhile from counting as unhandled.
    next?.catch(() => undefined);
    result.skipped += page.received - page.members.length;
    await writeMembers(broker, workspaceId, page.members, tags, result);
    done += page.received;
    await progress(done, Math.max(done, page.total));
    if (!next) break;
    page = await next;
    offset = nextOffset;
  }
  return result;
}

/** One page's members written; a member the contact rules refuse (no or bad email) is skipped. */
async function writeMembers(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  members: RemoteMember[],
  tags: string[],
  result: ImportResult,
): Promise<void> {
  await Promise.all(
    members.map(async (member) => {
      const { contact, consent } = contactOf(member, tags);
      if (!contact.email) {
        result.skipped += 1;
        return;
      }
      try {
        const written = await systemCall<{ created: boolean }>(broker, workspaceId, "contacts.identify", {
          contact,
          ...(consent ? { consent } : {}),
          source: "import",
        });
        if (written.created) result.created += 1;
        else result.updated += 1;
      } catch (err) {
        if ((err as { type?: unknown }).type !== "VALIDATION_ERROR") throw err;
        result.skipped += 1;
      }
    }),
  );
}
