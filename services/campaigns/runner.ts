import { LRUCache } from "lru-cache";
import type { ServiceBroker } from "moleculer";
import { config } from "../../lib/config";
import { sha256Hex } from "../../lib/crypto";
import { isNotFound } from "../../lib/errors";
import { systemCall } from "../../lib/system-call";
import { Sender } from "../webhooks/dispatcher";
import { guardEnabled } from "../webhooks/url-guard";
import { winnerOf } from "./ab.repo";
import * as repo from "./campaigns.repo";
import * as versionsRepo from "./versions.repo";
import * as enrollRepo from "./enroll.repo";
import * as enrollmentsRepo from "./enrollments.repo";
import type { EnrollmentRow } from "./enrollments.repo";
import { decide, nextNode, type Probe } from "./interpreter";
import type { Workflow, WorkflowNode } from "./workflow";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The journey run: claimed enrollments advance node by node until a wait
 * or the end, each step saved with its log line before the next. A step
 * repeated after a crash is harmless: a send takes an id derived from
 * enrollment and node (the send path never queues an id twice), the
 * other actions set what they set.
 */

/** Steps one enrollment may take in one claim (a workflow has no cycles; this bounds a long one). */
const MAX_STEPS = 100;
/** A step that failed for a passing reason (a service away) is tried again after this long. */
const RETRY_MS = 60_000;

/**
 * The id of one send, the same on every try (a UUID built from a hash):
 * of an enrollment's node, or of a broadcast's contact.
 */
export function derivedMessageId(scope: string, key: string): string {
  const h = sha256Hex(`${scope}:${key}`);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Versions never change: a process keeps the workflows it has read, the most recently used. */
const workflows = new LRUCache<string, Workflow>({ max: 1_000 });
export async function workflowOf(campaignId: string, version: number): Promise<Workflow | null> {
  const key = `${campaignId}:${version}`;
  let workflow = workflows.get(key);
  if (!workflow) {
    const read = await versionsRepo.versionWorkflow(campaignId, version);
    if (!read) return null;
    workflows.set(key, (workflow = read));
  }
  return workflow;
}

/** The facts a run's decisions ask for, from the store. */
export function storeProbe(
  broker: ServiceBroker,
  e: { workspace_id: WorkspaceId; campaign_id: string; id: string; contact_id: string },
): Probe {
  return {
    matches: async (filter) =>
      (
        await systemCall<{
          matches: boolean;
        }>(broker, e.workspace_id, "segments.matches", {
          contactId: e.contact_id,
          filter,
        })
      ).matches,
    engaged: (nodeId, kind, url) => {
      const messageId = derivedMessageId(e.id, nodeId);
      return kind === "clicked" && url
        ? enrollmentsRepo.linkClicked(e.workspace_id, e.contact_id, messageId, url)
        : messageEngaged(broker, e.workspace_id, messageId, kind);
    },
    winner: (nodeId) => winnerOf(e.campaign_id, nodeId),
  };
}

/** Whether a step's message was opened or clicked, as the messages area has it; a message not made yet was neither. */
async function messageEngaged(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  messageId: string,
  kind: "opened" | "clicked",
): Promise<boolean> {
  try {
    const message = await systemCall<{ openedAt: string | null; clickedAt: string | null }>(
      broker,
      workspaceId,
      "messages.get",
      { workspaceId, messageId },
    );
    return (kind === "opened" ? message.openedAt : message.clickedAt) !== null;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** A client error (4xx) will not pass by itself: the step fails. Anything else (a service away too) is tried again. */
const permanent = (err: unknown) => {
  const { code, type } = err as { code?: unknown; type?: unknown };
  return typeof code === "number" && code >= 400 && code < 500 && type !== "SERVICE_NOT_FOUND";
};

/** A send the frequency cap holds, for a step that waits for it. */
interface Held {
  until: Date;
  detail: string;
}

/** Perform an action node; answers the log line's detail, or that the cap holds its send. */
async function perform(broker: ServiceBroker, e: EnrollmentRow, node: WorkflowNode): Promise<string | Held> {
  const c = node.config;
  const workspaceId = e.workspace_id;
  switch (node.type) {
    case "send": {
      const messageId = derivedMessageId(e.id, node.id);
      if (c.onFrequencyCap === "wait" && !c.transactional) {
        const cap = await systemCall<{ capped: boolean; freeAt: string | null }>(
          broker,
          workspaceId,
          "messages.capState",
          {
            contactId: e.contact_id,
            channel: c.channel,
          },
        );
        if (cap.capped && cap.freeAt)
          return {
            until: new Date(cap.freeAt),
            detail: `the frequency cap holds the send until ${cap.freeAt}`,
          };
      }
      const result = await systemCall<{
        queued: number;
        suppressed: number;
        skipped: Array<{ reason: string }>;
      }>(broker, workspaceId, "messages.enqueue", {
        channel: c.channel,
        templateId: c.templateId,
        contactIds: [e.contact_id],
        messageIds: [messageId],
        campaignId: e.campaign_id,
        enrollmentId: e.id,
        transactional: c.transactional ?? false,
        ...(c.variables ? { variables: c.variables } : {}),
      });
      if (result.queued) return `message ${messageId} queued`;
      if (result.suppressed) return `message ${messageId} suppressed`;
      const reason = result.skipped[0]?.reason ?? "skipped";
      // A step repeated after a crash finds its message queued by the first try.
      return reason === "already_queued"
        ? `message ${messageId} queued by an earlier try`
        : `not sent: ${reason}`;
    }
    case "update_contact": {
      const changes: Record<string, unknown> = { ...((c.set as Record<string, unknown>) ?? {}) };
      if (c.addTags || c.removeTags) {
        const contact = await systemCall<{
          tags: string[];
        }>(broker, workspaceId, "contacts.get", {
          workspaceId,
          contactId: e.contact_id,
        });
        const removed = new Set(c.removeTags as string[] | undefined);
        changes.tags = [...new Set([...contact.tags, ...((c.addTags as string[]) ?? [])])].filter(
          (t) => !removed.has(t),
        );
      }
      if (Object.keys(changes).length)
        await systemCall(broker, workspaceId, "contacts.update", {
          workspaceId,
          contactId: e.contact_id,
          ...changes,
        });
      for (const [channel, status] of Object.entries((c.consent as Record<string, string>) ?? {}))
        await systemCall(broker, workspaceId, "contacts.consentPut", {
          workspaceId,
          contactId: e.contact_id,
          channel,
          status,
          source: "automation",
        });
      return "contact updated";
    }
    case "segment_add":
    case "segment_remove":
      await systemCall(
        broker,
        workspaceId,
        node.type === "segment_add" ? "segments.addMembers" : "segments.removeMembers",
        { workspaceId, segmentId: c.segmentId, contactIds: [e.contact_id] },
      );
      return `${node.type === "segment_add" ? "added to" : "removed from"} segment ${String(c.segmentId)}`;
    case "enroll_campaign": {
      const target = await repo.getCampaign(workspaceId, String(c.campaignId));
      if (!target || target.status !== "active" || !target.publishedVersion)
        return `campaign ${String(c.campaignId)} is not active`;
      const [enrolled] = await enrollRepo.enroll(workspaceId, {
        campaignId: target.id,
        version: target.publishedVersion,
        contactIds: [e.contact_id],
        triggerId: null,
        event: null,
        reentry: "always",
      });
      return enrolled ? `enrolled in campaign ${target.id}` : `already in campaign ${target.id}`;
    }
    case "webhook": {
      const body = c.body ?? {
        campaignId: e.campaign_id,
        enrollmentId: e.id,
        contactId: e.contact_id,
        nodeId: node.id,
      };
      const outcome = await webhookSender().post(String(c.url), JSON.stringify(body), {
        "content-type": "application/json",
        // The same on every try of this step: the receiver can tell a repeat.
        "idempotency-key": derivedMessageId(e.id, node.id),
        ...((c.headers as Record<string, string> | undefined) ?? {}),
      });
      if (!outcome.error) return `posted: HTTP ${outcome.statusCode}`;
      const status = outcome.statusCode;
      // A refused address or a 4xx (but 429) will not pass by itself; the rest is tried again.
      const refused =
        status === null ? outcome.error.startsWith("url ") : status >= 400 && status < 500 && status !== 429;
      throw Object.assign(new Error(`webhook: ${outcome.error}`), refused ? { code: 400 } : {});
    }
    case "create_task": {
      const days = c.dueInDays as number | undefined;
      await systemCall(broker, workspaceId, "tasks.createOnce", {
        workspaceId,
        taskId: derivedMessageId(e.id, node.id),
        title: c.title,
        contactId: e.contact_id,
        ...(days !== undefined ? { dueAt: new Date(Date.now() + days * 86_400_000).toISOString() } : {}),
        ...(c.assigneeId ? { assigneeId: c.assigneeId } : {}),
      });
      return `task "${String(c.title)}" created`;
    }
    case "notify_member": {
      const userIds = c.userId
        ? await systemCall<string[]>(broker, workspaceId, "workspaces.memberUserIds", {
            workspaceId,
            userIds: [c.userId],
          })
        : (
            await systemCall<
              Array<{
                userId: string;
                role: string;
              }>
            >(broker, workspaceId, "workspaces.listMembers", { workspaceId })
          )
            .filter((m) => m.role === c.role)
            .map((m) => m.userId);
      const { notified } = await systemCall<{ notified: number }>(broker, workspaceId, "crm.notifyMembers", {
        userIds,
        type: "campaign.notification",
        title: String(c.message).slice(0, 300),
        data: { campaignId: e.campaign_id, enrollmentId: e.id, contactId: e.contact_id, nodeId: node.id },
        dedupeKey: `campaign:${e.id}:${node.id}`,
      });
      return `${notified} member(s) notified`;
    }
    default:
      return node.type;
  }
}

let sender: Sender | null = null;
/** One keep-alive sender for webhook steps (the outbound webhooks' own, with its address guard). */
const webhookSender = () => (sender ??= new Sender(config().webhookTimeoutMs, guardEnabled));

/** Close the webhook steps' connections (the service stopping). */
export function closeWebhookSender(): void {
  sender?.stop();
  sender = null;
}

/** Nodes that go on as actions (`act`) yet change nothing outside the enrollment: their logs may wait for the next save. */
const DECIDING_NODES = new Set<string>(["entry", "wait"]);

/**
 * The saves of enrollments whose pass ends at a wait for time or at an end,
 * held and written together (one statement) when the pass ends or before
 * any step acts outside its enrollment. Until then each is still leased to
 * this runner; a crash before the write repeats their steps, which is
 * harmless. A wait for an event is saved at once: the event may come any
 * moment, and only a saved wait is found by it.
 */
export class HeldSaves {
  private held: enrollmentsRepo.StepSave[] = [];
  hold(save: enrollmentsRepo.StepSave): void {
    this.held.push(save);
  }
  get size(): number {
    return this.held.length;
  }
  async write(): Promise<void> {
    await enrollmentsRepo.saveSteps(this.held.splice(0));
  }
}

/** Advance one claimed enrollment (its `run_at` is its lease's end) as far as it goes now; the caller writes `held`. */
export async function advance(
  broker: ServiceBroker,
  e: EnrollmentRow,
  now: Date,
  held: HeldSaves,
): Promise<"advanced" | "failed"> {
  const workflow = await workflowOf(e.campaign_id, e.version);
  const entry = workflow?.nodes.find((n) => n.type === "entry");
  if (!workflow || !entry) {
    held.hold({
      e,
      next: {
        status: "failed",
        currentNodeId: e.current_node_id,
        runAt: null,
        exitReason: "version_missing",
      },
      logs: [
        {
          nodeId: e.current_node_id ?? "entry",
          outcome: "failed",
          branch: null,
          detail: `version ${e.version} missing`,
        },
      ],
    });
    return "failed";
  }
  const probe = storeProbe(broker, e);
  // Steps that only decide leave their logs to go with the next save; an action's step is saved before and after it runs.
  const decided: enrollmentsRepo.StepRecord[] = [];
  const save = (next: enrollmentsRepo.NextStep, log: enrollmentsRepo.StepRecord) =>
    enrollmentsRepo.saveSteps([{ e, next, logs: [...decided.splice(0), log] }]);
  const hold = (next: enrollmentsRepo.NextStep, log: enrollmentsRepo.StepRecord) =>
    held.hold({ e, next, logs: [...decided.splice(0), log] });
  let current = e.current_node_id ?? entry.id;
  let node = workflow.nodes.find((n) => n.id === current);
  let resumed = e.status === "waiting";
  for (let steps = 0; node && steps < MAX_STEPS; steps++) {
    const at = { campaignId: e.campaign_id, enrollmentId: e.id, contactId: e.contact_id, now };
    const decision = await decide(
      node,
      { ...at, resumed, resumeBranch: resumed ? e.next_branch : null },
      probe,
    );
    resumed = false;
    if (decision.kind === "wait") {
      const next = {
        status: "waiting" as const,
        currentNodeId: node.id,
        runAt: decision.until,
        waitingUntil: decision.until,
        waitingEvent: decision.waitingEvent,
      };
      const log = { nodeId: node.id, outcome: "ok" as const, branch: null, detail: decision.reason };
      if (decision.waitingEvent) await save(next, log);
      else hold(next, log);
      return "advanced";
    }
    if (decision.kind === "end") {
      hold(
        { status: decision.status, currentNodeId: node.id, runAt: null, exitReason: decision.reason },
        { nodeId: node.id, outcome: "ok", branch: null, detail: decision.reason },
      );
      return "advanced";
    }
    let detail = decision.reason;
    const acts = decision.kind === "act" && !DECIDING_NODES.has(node.type);
    if (acts) {
      // Where the enrollment (and every held one) stands is saved before anything outside it changes.
      if (decided.length)
        held.hold({
          e,
          next: { status: "active", currentNodeId: node.id, runAt: e.run_at },
          logs: decided.splice(0),
        });
      await held.write();
      try {
        const done = await perform(broker, e, node);
        if (typeof done !== "string") {
          // Waits at this node; when the cap frees, the step runs again.
          hold(
            { status: "waiting", currentNodeId: node.id, runAt: done.until, waitingUntil: done.until },
            { nodeId: node.id, outcome: "skipped", branch: null, detail: done.detail },
          );
          return "advanced";
        }
        detail = done;
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        const failed = permanent(err);
        await save(
          failed
            ? { status: "failed", currentNodeId: node.id, runAt: null, exitReason: "step_failed" }
            : { status: "active", currentNodeId: node.id, runAt: new Date(now.getTime() + RETRY_MS) },
          {
            nodeId: node.id,
            outcome: "failed",
            branch: null,
            detail: failed ? message : `${message} (retrying)`,
          },
        );
        return "failed";
      }
    }
    const next = nextNode(workflow, node, decision);
    const log = {
      nodeId: node.id,
      outcome: decision.kind === "branch" ? ("branched" as const) : ("ok" as const),
      branch: decision.kind === "branch" ? decision.branch : null,
      detail,
    };
    if (!next) {
      hold({ status: "completed", currentNodeId: node.id, runAt: null, exitReason: "path_end" }, log);
      return "advanced";
    }
    // Still ours until the lease ends: the next step runs in this loop.
    if (acts) await save({ status: "active", currentNodeId: next, runAt: e.run_at }, log);
    else decided.push(log);
    current = next;
    node = workflow.nodes.find((n) => n.id === next);
  }
  // Out of steps for this pass (or at a node the workflow lacks): what was decided is kept; the next claim goes on from there.
  if (decided.length)
    held.hold({ e, next: { status: "active", currentNodeId: current, runAt: e.run_at }, logs: decided });
  return "advanced";
}
