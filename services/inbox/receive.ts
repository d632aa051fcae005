import type { LoggerInstance } from "moleculer";
import { MicroBatcher } from "../../lib/batcher";
import { database } from "../../lib/database";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { assignNewThread } from "./assignment";
import * as autoReplies from "./auto-replies.repo";
import type { AutoReplyRow } from "./auto-replies.repo";
import { localDay } from "./business-hours";
import { notifyMembers, workspaceZone, type Caller } from "./directory";
import type { ReceiveInput, Received } from "./inbox.schemas";
import * as messages from "./inbox-messages.repo";
import type { FiledInbound, NewInbound } from "./inbox-messages.repo";
import { bareMessageId, keywordMatch, withinHours } from "./matching";
import { sendAnswer, type Answered } from "./replies";
import * as rules from "./rules.repo";
import * as threads from "./threads.repo";
import type { ThreadRow } from "./threads.repo";
import type { WorkspaceId } from "../../lib/tenancy";

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
  ws: WorkspaceId,
  input: ReceiveInput,
  logger: LoggerInstance,
): Promise<Received> {
  const reading = readDefinitions(from, ws);
  const filing = await filingOf(from, ws, input);
  return (await afterFiling(from, ws, input, filing, await filer.add(filing), reading, logger)).received;
}

/**
 * The batch form of `receive` (an inbound batch of one workspace): the
 * messages filed in one transaction (each conversation's in the order
 * given), the rules read once; then each thread's messages are assigned,
 * notified and auto-answered in order, threads side by side. A failure of
 * the filing fails the whole call (nothing is filed): the caller files the
 * messages one by one.
 */
export async function receiveMany(
  from: Caller,
  ws: WorkspaceId,
  inputs: ReceiveInput[],
  logger: LoggerInstance,
): Promise<Received[]> {
  const reading = readDefinitions(from, ws);
  const filings = await Promise.all(inputs.map((input) => filingOf(from, ws, input)));
  const outcomes = await fileTogether(filings);
  const answers: Received[] = new Array(inputs.length);
  const byThread = new Map<string, number[]>();
  outcomes.forEach((outcome, at) => {
    const key = outcome.duplicate ? `duplicate ${at}` : outcome.thread.id;
    byThread.set(key, [...(byThread.get(key) ?? []), at]);
  });
  await Promise.all(
    [...byThread.values()].map(async (ats) => {
      // A thread made by an earlier message of the batch was assigned after the filing: its later ones notify that member.
      let assignee: string | null = null;
      for (const at of ats) {
        const after = await afterFiling(
          from,
          ws,
          inputs[at],
          filings[at],
          outcomes[at],
          reading,
          logger,
          assignee,
        );
        answers[at] = after.received;
        assignee = after.assignee;
      }
    }),
  );
  return answers;
}

/** What assignment and auto-replies read (the active rules and replies, the workspace's zone), asked while messages are filed. */
function readDefinitions(from: Caller, ws: WorkspaceId) {
  const reading = rules
    .activeDefinitions(ws)
    .then(
      async ({ rules: assignment, replies }) =>
        [
          assignment,
          replies,
          assignment.length || replies.length ? await workspaceZone(from, ws) : "UTC",
        ] as const,
    );
  reading.catch(() => undefined);
  return reading;
}

/** An input as the filer takes it: its ids bare, and the campaign message it answers (if any). */
async function filingOf(from: Caller, ws: WorkspaceId, input: ReceiveInput): Promise<Filing> {
  const refs = (input.references ?? []).map(bareMessageId).filter(Boolean);
  return {
    workspaceId: ws,
    contactId: input.contactId,
    channel: input.channel,
    body: input.text,
    subject: input.subject ?? null,
    originMessageId: await repliedMessage(from, ws, refs),
    providerId: input.providerId,
    providerMessageId: input.providerMessageId ? bareMessageId(input.providerMessageId) : null,
    refs,
    attachments: input.attachments ?? [],
  };
}

/** After a message is filed: a new thread assigned, an assignee told of a message, auto-replies. */
async function afterFiling(
  from: Caller,
  ws: WorkspaceId,
  input: ReceiveInput,
  filing: Filing,
  outcome: Filed,
  reading: ReturnType<typeof readDefinitions>,
  logger: LoggerInstance,
  /** The thread's assignee as an earlier message of the same batch left it (its row was read before). */
  assignedEarlier: string | null = null,
): Promise<{ received: Received; assignee: string | null }> {
  if (outcome.duplicate) return { received: outcome, assignee: assignedEarlier };
  const { thread, created, inboundId, autoAnswered } = outcome;
  // The message is stored: what follows must not fail its webhook (a retry would find it stored and do nothing).
  const step = <T>(what: string, run: () => Promise<T>) =>
    run().catch((err: unknown) => {
      logger.warn(`Inbound ${inboundId} of thread ${thread.id}: ${what} failed`, err);
      return null;
    });
  const read = await step("reading the rules", () => reading);
  const [assignmentRules, replyRules, zone] = read ?? [[], [], "UTC"];
  // The auto-replies go while the thread is assigned: an answer does not depend on who has the thread.
  const replying = step("auto-replies", () =>
    autoReply(
      from,
      ws,
      replyRules,
      zone,
      thread,
      input.text,
      { provider_id: input.providerId, provider_message_id: filing.providerMessageId, refs: filing.refs },
      autoAnswered,
      logger,
    ),
  );
  const assigned = created
    ? await step("assignment", () => assignNewThread(from, ws, assignmentRules, zone, thread, input.text))
    : null;
  const assignee = assigned?.assignee_id ?? thread.assignee_id ?? assignedEarlier;
  if (!created && assignee) {
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
  await replying;
  return { received: { threadId: thread.id, inboundId, duplicate: false, keptFiles: [] }, assignee };
}

/** An inbound message to file, with its workspace. */
type Filing = NewInbound & { workspaceId: WorkspaceId };

/** How a message was filed: a duplicate, or its thread and stored id. */
type Filed =
  | Extract<FiledInbound, { duplicate: true }>
  | (Extract<FiledInbound, { duplicate: false }> & { inboundId: string });

/**
 * Concurrent inbound messages are filed together: one transaction holding
 * their conversations' locks (taken in one statement), then one statement
 * per workspace for the messages of distinct conversations (a second
 * message of a conversation goes in the next statement, which sees the
 * first's thread). A batch that fails is filed again message by message
 * (lib/batcher.ts), so one message's failure is its own.
 */
const filer = new MicroBatcher((items: Filing[]) => fileTogether(items), { maxBatch: 50, lanes: 2 });

/** One batch of `filer` (or of `receiveMany`): all filed, or none. */
async function fileTogether(items: Filing[]): Promise<Filed[]> {
  return (await database()).transaction(async (transaction) => {
    await threads.lockConversations(items, transaction);
    const filed: Filed[] = new Array(items.length);
    for (const round of conversationRounds(items)) {
      const byWorkspace = new Map<WorkspaceId, number[]>();
      for (const at of round)
        byWorkspace.set(items[at].workspaceId, [...(byWorkspace.get(items[at].workspaceId) ?? []), at]);
      for (const [workspaceId, ats] of byWorkspace) {
        const answers = await messages.fileInbounds(
          workspaceId,
          ats.map((at) => items[at]),
          transaction,
        );
        ats.forEach((at, k) => {
          const one = answers[k];
          if (one.duplicate) filed[at] = one;
          // Thrown inside the transaction: the threads' changes are rolled back with it.
          else if (!one.thread || !one.inboundId)
            throw new Error(
              `Inbound ${items[at].providerMessageId} was stored, or its thread taken, while its conversation was locked`,
            );
          else filed[at] = { ...one, inboundId: one.inboundId };
        });
      }
    }
    return filed;
  });
}

/** The batch's indexes in rounds in which each conversation (workspace, contact, channel) has one message, in order. */
function conversationRounds(items: Filing[]): number[][] {
  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  items.forEach((item, at) => {
    const key = `${item.workspaceId}\n${item.contactId}\n${item.channel}`;
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (rounds[round] ??= []).push(at);
  });
  return rounds;
}

/** The sent message (a campaign's, say) a mail names in In-Reply-To or References, if the send path knows it. */
async function repliedMessage(from: Caller, ws: WorkspaceId, refs: string[]): Promise<string | null> {
  if (!refs.length || !isServiceAvailable(brokerOf(from), "messages")) return null;
  const found = await systemCall<Array<{ id: string }>>(from, ws, "messages.repliedTo", {
    references: refs.slice(0, 100),
  });
  return found[0]?.id ?? null;
}

/**
 * Each active auto-reply on the thread's channel (or any) whose keywords the
 * text has (or none), outside its business hours in the workspace's zone,
 * answers once per thread and local day (`logged`: what the thread's log
 * showed at filing, asked no more); a failed answer does not stop the others.
 */
async function autoReply(
  from: Caller,
  ws: WorkspaceId,
  rules: AutoReplyRow[],
  zone: string,
  thread: ThreadRow,
  text: string,
  answered: Answered,
  logged: Set<string>,
  logger: LoggerInstance,
) {
  const now = new Date();
  const day = localDay(now, zone);
  for (const rule of rules) {
    if (rule.channel && rule.channel !== thread.channel) continue;
    if (logged.has(`${rule.id} ${day}`)) continue;
    if (!keywordMatch(rule.keywords, text)) continue;
    if (rule.business_hours && withinHours(rule.business_hours, now, zone)) continue;
    const row = await autoReplies.firstAnswerToday(ws, thread.id, rule.id, day, rule.body);
    if (!row) continue;
    await sendAnswer(from, ws, thread, row, false, answered).catch((err: unknown) =>
      logger.warn(`Auto-reply ${rule.id} to thread ${thread.id} could not be sent`, err),
    );
  }
}
