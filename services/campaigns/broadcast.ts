import type { LoggerInstance, ServiceBroker } from "moleculer";
import { startJob } from "../../lib/jobs";
import { systemCall } from "../../lib/system-call";
import * as repo from "./broadcasts.repo";
import { derivedMessageId } from "./runner";

/**
 * A broadcast's send, as a job: the audience is taken once, then streamed
 * in pages of 1,000 through `messages.enqueue` (every check of the send
 * path; the provider batching follows in the sender). Each contact's
 * message id is derived from the campaign and the contact, so a send that
 * stopped and runs again queues nobody twice. The job's result is
 * `{queued, suppressed, skipped}`.
 */

const PAGE = 1000;
const PAGES_IN_FLIGHT = 4;

export async function sendBroadcast(
  broker: ServiceBroker,
  logger: LoggerInstance,
  broadcast: repo.BroadcastRow,
  createdBy: string | null,
): Promise<string> {
  const { id, workspace_id: workspaceId, broadcast: spec } = broadcast;
  const { jobId } = await startJob(
    { workspaceId, type: "campaigns.broadcast", createdBy },
    async (progress) => {
      const total = await repo.takeAudience(workspaceId, id, spec);
      await progress(0, total);
      let done = 0;
      const inFlight = new Set<Promise<void>>();
      for (let after = ""; ;) {
        // A pause stops the send between pages; lifting it sends on from the start, skipping who has a message.
        if (!(await repo.stillActive(id))) {
          await Promise.all(inFlight);
          return { ...(await repo.broadcastResult(id)), stopped: true };
        }
        const contactIds = await repo.recipientsPage(id, after, PAGE);
        if (!contactIds.length) break;
        after = contactIds[contactIds.length - 1];
        // A few pages queue at once: each waits on its checks' queries while another is checked.
        const page: Promise<void> = systemCall(broker, workspaceId, "messages.enqueue", {
          channel: spec.channel,
          templateId: spec.templateId,
          contactIds,
          messageIds: contactIds.map((contactId) => derivedMessageId(id, contactId)),
          campaignId: id,
          transactional: spec.transactional,
          ...(spec.sendAt ? { sendAt: spec.sendAt } : {}),
          ...(spec.variables ? { variables: spec.variables } : {}),
          ...(spec.topic ? { topic: spec.topic } : {}),
        })
          .then(() => {
            done += contactIds.length;
            return progress(done, total);
          })
          .finally(() => inFlight.delete(page));
        // The failure reaches the job through race or all; this only keeps it from counting as unhandled.
        page.catch(() => undefined);
        inFlight.add(page);
        if (inFlight.size >= PAGES_IN_FLIGHT) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
      const result = await repo.broadcastResult(id);
      await repo.finishBroadcast(id, "completed");
      return result;
    },
    (err) => {
      // A refusal (the template deleted, say) will not pass: the broadcast pauses instead of retrying.
      const code = (err as { code?: unknown }).code;
      logger.error(`Broadcast ${id} stopped`, err);
      if (typeof code === "number" && code >= 400 && code < 500)
        repo.finishBroadcast(id, "paused").catch(() => undefined);
    },
  );
  await repo.setJob(id, jobId);
  return jobId;
}
