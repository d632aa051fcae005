import type { LoggerInstance } from "moleculer";
import { database } from "../../lib/database";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { assignNewThread } from "./assignment";
import * as autoReplies from "./auto-replies.repo";
import { localDay } from "./business-hours";
import { notifyMembers, workspaceZone, type Caller } from "./directory";
import type { ReceiveInput } from "./inbox.schemas";
import * as messages from "./inbox-messages.repo";
import { bareMessageId, keywordMatch, withinHours } from "./matching";
import { answer } from "./replies";
import * as threads from "./threads.repo";
import type { ThreadRow } from "./threads.repo";

/**
 * An inbound message becomes part of its contact's conversation on the
 * channel (contract-messaging 11): the thread its mail answers (In-Reply-To,
 * References), else the contact's thread that is not closed, else a new one;
 * `open` again (a snoozed one wakes). Once per provider message id. Writers
 * of one contact's conversation take turns (an advisory lock), so two
 * replicas receiving at once make one thread. Then a new thread is assigned,
 * an assignee hears of the message, and auto-replies answer.
 */

const brokerOf = (from: Caller) => ("broker" in from ? from.broker : from);

export async function receive(
  from: Caller,
  ws: string,
  input: ReceiveInput,
  logger: LoggerInstance,
): Promise<{ threadId: string; inboundId: string; duplicate: boolean }> {
  const refs = (input.references ?? []).map(bareMessageId).filter(Boolean);
  const providerMessageId = input.providerMessageId ? bareMessageId(input.providerMessageId) : null;
  const origin = await repliedMessage(from, ws, refs);
  const sequelize = await database();
  const outcome = await sequelize.transaction(async (transaction) => {
    await threads.lockConversation(ws, input.contactId, input.channel, transaction);
    const seen = providerMessageId
      ? await messages.findInbound(input.providerId, providerMessageId, transaction)
      : null;
    if (seen) return { duplicate: true as const, threadId: seen.thread_id, inboundId: seen.id };
    const referenced = await messages.threadByReferences(ws, refs, transaction);
    let thread = referenced ? await threads.findThread(ws, referenced, transaction) : null;
    if (thread && thread.channel !== input.channel) thread = null;
    thread ??= await threads.openThreadOf(ws, input.contactId, input.channel, transaction);
    const created = !thread;
    thread ??= await threads.insertThread(
      ws,
      {
        contactId: input.contactId,
        channel: input.channel,
        subject: input.subject ?? null,
        originMessageId: origin,
      },
      transaction,
    );
    const inbound = await messages.insertInbound(
      ws,
      {
        threadId: thread.id,
        body: input.text,
        subject: input.subject ?? null,
        providerId: input.providerId,
        providerMessageId,
        refs,
      },
      transaction,
    );
    if (!inbound)
      throw new Error(`Inbound ${providerMessageId} was stored while its conversation was locked`);
    const touched = await threads.touchInbound(ws, thread.id, input.subject ?? null, origin, transaction);
    return { duplicate: false as const, thread: touched, created, inboundId: inbound.id };
  });
  if (outcome.duplicate) return outcome;
  const { thread, created, inboundId } = outcome;
  // The message is stored: what follows must not fail its webhook (a retry would find it stored and do nothing).
  const step = <T>(what: string, run: () => Promise<T>) =>
    run().catch((err: unknown) => {
      logger.warn(`Inbound ${inboundId} of thread ${thread.id}: ${what} failed`, err);
      return null;
    });
  const assigned = created
    ? await step("assignment", () => assignNewThread(from, ws, thread, input.text))
    : null;
  if (!created && thread.assignee_id) {
    const assignee = thread.assignee_id;
    await step("the assignee's notification", () =>
      notifyMembers(from, ws, [assignee], {
        type: "inbox.message",
        title: "New message in your conversation",
        body: input.text.slice(0, 300),
        data: { threadId: thread.id, channel: thread.channel, contactId: thread.contact_id },
        dedupeKey: `inbox:message:${inboundId}`,
      }),
    );
  }
  await step("auto-replies", () => autoReply(from, ws, assigned ?? thread, input.text, logger));
  return { threadId: thread.id, inboundId, duplicate: false };
}

/** The sent message (a campaign's, say) a mail names in In-Reply-To or References, if the send path knows it. */
async function repliedMessage(from: Caller, ws: string, refs: string[]): Promise<string | null> {
  if (!refs.length || !isServiceAvailable(brokerOf(from), "messages")) return null;
  const ids = [...refs, ...refs.map((r) => `<${r}>`)];
  const found = await systemCall<Array<{ id: string }>>(from, ws, "messages.byProviderMessageIds", {
    providerMessageIds: ids.slice(0, 100),
  });
  return found[0]?.id ?? null;
}

/**
 * Each active auto-reply on the thread's channel (or any) whose keywords the
 * text has (or none), outside its business hours in the workspace's zone,
 * answers once per thread and local day; a failed answer does not stop the others.
 */
async function autoReply(from: Caller, ws: string, thread: ThreadRow, text: string, logger: LoggerInstance) {
  const rules = await autoReplies.listAutoReplies(ws, true);
  if (!rules.length) return;
  const now = new Date();
  const zone = await workspaceZone(from, ws);
  const day = localDay(now, zone);
  for (const rule of rules) {
    if (rule.channel && rule.channel !== thread.channel) continue;
    if (!keywordMatch(rule.keywords, text)) continue;
    if (rule.business_hours && withinHours(rule.business_hours, now, zone)) continue;
    if (!(await autoReplies.firstToday(ws, thread.id, rule.id, day))) continue;
    await answer(from, ws, thread, rule.body, { id: null, auto: true }).catch((err: unknown) =>
      logger.warn(`Auto-reply ${rule.id} to thread ${thread.id} could not be sent`, err),
    );
  }
}
