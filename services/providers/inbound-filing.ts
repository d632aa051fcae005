import type { LoggerInstance, ServiceBroker } from "moleculer";
import { COMMAND_CHANNELS, type CommandChannel, type InboxChannel } from "../../lib/channels";
import { optionalStepRuns } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import type { WorkspaceId } from "../../lib/tenancy";
import { DEFAULT_COMMANDS, matchCommand } from "./commands";
import { removeAttachments, type InboundAttachment } from "./inbound-mail";
import * as queue from "./inbound-queue.repo";
import type { ClaimedInbound, InboundEvent as Inbound, Unfiled } from "./inbound-queue.repo";
import type { Received } from "../inbox/inbox.schemas";
import * as repo from "./providers.repo";
import type { CallbackProvider } from "./providers.repo";
import { SMSAPI1_ANSWERED_KEYWORDS } from "./smsapi1/client";

/**
 * Filing the inbound messages the webhooks accepted (inbound_queue,
 * migration 0105): a pass claims a batch of due rows under a lease, files
 * the conversations of the batch side by side and each conversation's
 * messages in arrival order, marks the filed rows and hands the others back
 * (due again after a backoff; given up on after MAX_ATTEMPTS). Concurrent
 * conversations share the batched statements of the paths they call (the
 * inbox's filer, contacts, events).
 */

/** How many rows a pass claims. */
export const INBOUND_BATCH = 100;
/** How long a claim is this node's: a node that dies holding it hands it over when it runs out. */
const LEASE_SECONDS = 60;
/** Tries of one message before it is given up on (`failed_at`, its last error kept). */
const MAX_ATTEMPTS = 10;

/** Seconds before a message whose `attempts`-th try failed is tried again: doubling, at most ten minutes. */
export const retryDelaySeconds = (attempts: number): number => Math.min(600, 2 ** attempts);

/**
 * One pass: a claimed batch filed; answers how many rows it claimed. The
 * plain messages (not a channel command, not a deep link's token) of each
 * workspace are filed set-based (`fileTogether`); a conversation holding
 * another kind of message, and every conversation of a workspace whose
 * set-based filing failed, goes message by message (`receiveInbound`), so
 * a failing message is retried alone with its backoff.
 */
export async function fileInboundBatch(
  broker: ServiceBroker,
  logger: LoggerInstance,
  limit = INBOUND_BATCH,
): Promise<number> {
  const rows = await queue.claimInbound(broker.nodeID, limit, LEASE_SECONDS);
  if (!rows.length) return 0;
  const providers = new Map<string, CallbackProvider | null>();
  for (const id of new Set(rows.map((r) => r.provider_id)))
    providers.set(id, await repo.providerForCallback(id));
  const filed: string[] = [];
  const unfiled: Unfiled[] = [];
  const oneByOne = (messages: ClaimedInbound[]) =>
    fileConversation(broker, logger, providers, messages, filed, unfiled);
  const plain = new Map<WorkspaceId, ClaimedInbound[][]>();
  const others: ClaimedInbound[][] = [];
  for (const messages of conversations(rows)) {
    const provider = providers.get(messages[0].provider_id);
    // Gone since (its rows go with it, ON DELETE CASCADE): nothing to file them for.
    if (!provider) filed.push(...messages.map((m) => m.id));
    else if (messages.every((m) => isPlain(provider, m.inbound)))
      plain.set(provider.workspace_id, [...(plain.get(provider.workspace_id) ?? []), messages]);
    else others.push(messages);
  }
  await Promise.all([
    ...others.map(oneByOne),
    ...[...plain].map(async ([workspaceId, convs]) => {
      const batch = convs.flat().sort((a, b) => Number(a.id) - Number(b.id));
      try {
        await fileTogether(
          broker,
          workspaceId,
          batch.map((row) => ({ row, provider: providers.get(row.provider_id)! })),
        );
        filed.push(...batch.map((r) => r.id));
      } catch (err) {
        logger.warn(
          `Inbound batch of ${batch.length} in workspace ${workspaceId} filed one by one: ${(err as Error)?.message ?? String(err)}`,
        );
        await Promise.all(convs.map(oneByOne));
      }
    }),
  ]);
  await queue.markFiled(broker.nodeID, filed);
  await queue.markUnfiled(broker.nodeID, unfiled);
  return rows.length;
}

/** One conversation's messages in order, each through `receiveInbound`; a failure hands it and the later ones back. */
async function fileConversation(
  broker: ServiceBroker,
  logger: LoggerInstance,
  providers: Map<string, CallbackProvider | null>,
  messages: ClaimedInbound[],
  filed: string[],
  unfiled: Unfiled[],
): Promise<void> {
  for (const [at, row] of messages.entries()) {
    try {
      const provider = providers.get(row.provider_id);
      if (provider) await receiveInbound(broker, provider, row.inbound, row.attachments);
      filed.push(row.id);
    } catch (err) {
      const error = (err as Error)?.message ?? String(err);
      const giveUp = row.attempts >= MAX_ATTEMPTS;
      logger.warn(
        `Inbound ${row.id} (${row.conversation.replace(/\n/g, " ")}), try ${row.attempts}: ${giveUp ? "given up" : "filed again later"}: ${error}`,
      );
      unfiled.push({
        id: row.id,
        error,
        retryInSeconds: giveUp ? null : retryDelaySeconds(row.attempts),
      });
      // The conversation's later messages wait for it (the claim skips them while it is due later).
      for (const later of messages.slice(at + 1))
        unfiled.push({ id: later.id, error: null, retryInSeconds: 0 });
      return;
    }
  }
}

/** A message of the hot path: neither a deep link's `/start <token>` nor a channel command. */
function isPlain(provider: CallbackProvider, inbound: Inbound): boolean {
  if (inbound.linkToken) return false;
  const channel = provider.channel;
  return (
    !isCommandChannel(channel) ||
    !matchCommand(provider.commands ?? DEFAULT_COMMANDS, channel, inbound.command ?? inbound.text)
  );
}

/**
 * Plain messages of one workspace, in arrival order, filed set-based: their
 * senders' contacts in one call (`contacts.forAddresses`), the messages into
 * their conversations in one (`inbox.receiveBatch`), their
 * `<channel>.message_received` events in one (`events.recordBatch`, each
 * chain run). What `receiveInbound` does for each, without its commands.
 * Throws when a call fails: the caller files the messages one by one (a
 * message already filed is then recognised by its provider message id).
 */
async function fileTogether(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  batch: Array<{ row: ClaimedInbound; provider: CallbackProvider }>,
): Promise<void> {
  const contacts = await systemCall<Array<{ contactId: string }>>(
    broker,
    workspaceId,
    "contacts.forAddresses",
    {
      addresses: batch.map(({ row, provider }) =>
        senderAddress(provider.channel as InboxChannel, row.inbound),
      ),
    },
  );
  const filings: Array<Received | null> = batch.map(() => null);
  if (optionalStepRuns(broker, "inbox.receiveBatch")) {
    const received = await systemCall<Received[]>(broker, workspaceId, "inbox.receiveBatch", {
      messages: batch.map(({ row, provider }, at) => inboxMessage(provider, contacts[at].contactId, row)),
    });
    received.forEach((r, at) => (filings[at] = r));
    await Promise.all(received.map((r, at) => removeUnheld(r, batch[at].row.attachments)));
  } else await Promise.all(batch.map(({ row }) => removeAttachments(row.attachments)));
  if (optionalStepRuns(broker, "events.recordBatch"))
    await systemCall(broker, workspaceId, "events.recordBatch", {
      events: batch.map(({ row, provider }, at) =>
        receivedEvent(provider, contacts[at].contactId, filings[at], row.inbound),
      ),
    });
}

/** The batch's rows by conversation, each in arrival order. */
export function conversations<R extends Pick<ClaimedInbound, "conversation">>(rows: R[]): R[][] {
  const byConversation = new Map<string, R[]>();
  for (const row of rows) {
    const messages = byConversation.get(row.conversation);
    if (messages) messages.push(row);
    else byConversation.set(row.conversation, [row]);
  }
  return [...byConversation.values()];
}

/** Whether the provider answers this keyword itself (smsapi1 with `providerHandlesOptOut`). */
function providerAnswered(provider: CallbackProvider, keyword: string): boolean {
  return (
    provider.type === "smsapi1" &&
    provider.config.providerHandlesOptOut === true &&
    SMSAPI1_ANSWERED_KEYWORDS.has(keyword.trim().toUpperCase())
  );
}

/**
 * An inbound message on any channel: its contact (found by the channel's
 * address, else created), its conversation in the inbox (unless it is a
 * command), the activity (`<channel>.message_received` with the thread), and
 * a command it may be (STOP, START, HELP), answered on the same channel
 * through the same provider. Each channel's callbacks read their provider's
 * wire into the one `inbound` shape; this is the one path after that.
 */
export async function receiveInbound(
  broker: ServiceBroker,
  provider: CallbackProvider,
  inbound: Inbound,
  /** A mail's attachments, kept when it was accepted (removed unless the inbox files the mail). */
  attachments: InboundAttachment[],
): Promise<void> {
  const workspaceId = provider.workspace_id;
  const channel = provider.channel as InboxChannel;
  const contact = await inboundContact(broker, workspaceId, channel, inbound);
  // A channel command (STOP, START, HELP) is answered by its rule, not by a person or an auto-reply; a deep
  // link's `/start <token>` only binds the chat.
  const command =
    isCommandChannel(channel) && !inbound.linkToken
      ? matchCommand(provider.commands ?? DEFAULT_COMMANDS, channel, inbound.command ?? inbound.text)
      : null;
  const thread =
    !command && !contact.linked && optionalStepRuns(broker, "inbox.receive")
      ? await fileInInbox(
          broker,
          workspaceId,
          attachments,
          inboxMessage(provider, contact.id, { inbound, attachments }),
        )
      : null;
  if (!thread) await removeAttachments(attachments);
  if (optionalStepRuns(broker, "events.record"))
    await systemCall(
      broker,
      workspaceId,
      "events.record",
      receivedEvent(provider, contact.id, thread, inbound),
    );
  const reply = (text: string) =>
    systemCall(broker, workspaceId, "messages.create", {
      workspaceId,
      contactId: contact.id,
      to: inbound.from,
      channel,
      content: channel === "sms" ? { body: text } : { text },
      transactional: true,
      // SMS answers through the provider it came in on; a chat channel has only one provider.
      ...(channel === "sms" && { providerId: provider.id }),
    });
  if (contact.linked) await reply(LINK_WELCOME);
  if (!command || !isCommandChannel(channel)) return;
  if (command.action !== "help")
    await systemCall(broker, workspaceId, "contacts.applyPreferences", {
      contactId: contact.id,
      channels: { [channel]: command.action === "opt_out" ? "opted_out" : "opted_in" },
      source: COMMAND_SOURCES[channel][command.action],
    });
  // The confirmation a carrier requires, even to a number that just opted out: transactional. Not
  // when the provider has answered the keyword itself: the person would get two.
  if (command.reply && !providerAnswered(provider, command.keyword))
    await reply(command.reply).catch((err: { type?: string }) => {
      // A command that arrived past its channel's reply window (chatapp2's 24 hours) gets no reply.
      if (err.type !== "INVALID_STATE") throw err;
    });
}

/**
 * The message into its inbox conversation; its kept attachments go again
 * when the inbox holds no message for them (the provider delivered this one
 * before). A failure keeps them: the queue files the message again.
 */
async function fileInInbox(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  attachments: InboundAttachment[],
  params: Record<string, unknown>,
): Promise<Received> {
  const filed = await systemCall<Received>(broker, workspaceId, "inbox.receive", params);
  await removeUnheld(filed, attachments);
  return filed;
}

/**
 * A duplicate's kept files that no stored message holds: a delivery the
 * provider made again brought files of its own, which go; a filing tried
 * again (its answer lost, its batch's later call failed) brings the files
 * the stored message holds, which stay.
 */
function removeUnheld(filed: Received, attachments: InboundAttachment[]): Promise<void> {
  if (!filed.duplicate) return Promise.resolve();
  const held = new Set(filed.keptFiles);
  return removeAttachments(attachments.filter((a) => !held.has(a.storageKey ?? "")));
}

/** What `inbox.receive` takes for an inbound message. */
function inboxMessage(
  provider: CallbackProvider,
  contactId: string,
  { inbound, attachments }: { inbound: Inbound; attachments: InboundAttachment[] },
) {
  return {
    channel: provider.channel as InboxChannel,
    contactId,
    providerId: provider.id,
    from: inbound.from,
    to: inbound.to,
    text: inbound.text,
    ...(inbound.subject !== undefined ? { subject: inbound.subject } : {}),
    providerMessageId: inbound.providerMessageId,
    references: inbound.references ?? [],
    ...(attachments.length ? { attachments } : {}),
  };
}

/**
 * The activity an inbound message records (contract-messaging 8: `<channel>.message_received` with its thread).
 * A message in the inbox gives the event its own id, so a filing tried again (its answer lost, the batch's call
 * timed out after it stored) records the event once.
 */
function receivedEvent(
  provider: CallbackProvider,
  contactId: string,
  filed: Pick<Received, "threadId" | "inboundId"> | null,
  inbound: Inbound,
) {
  return {
    ...(filed && { id: filed.inboundId }),
    type: `${provider.channel}.message_received`,
    contactId,
    metadata: {
      providerId: provider.id,
      threadId: filed?.threadId ?? null,
      from: inbound.from,
      to: inbound.to,
      text: inbound.text,
      ...(inbound.subject !== undefined ? { subject: inbound.subject } : {}),
      providerMessageId: inbound.providerMessageId,
    },
  };
}

/** What `contacts.forAddress` takes for an inbound message's sender (a chat gives its names). */
function senderAddress(channel: InboxChannel, inbound: Inbound) {
  return {
    type: INBOUND_ADDRESS[channel],
    value: inbound.from,
    ...(channel === "chatapp1" && inbound.name?.firstName && { firstName: inbound.name.firstName }),
    ...(channel === "chatapp1" && inbound.name?.lastName && { lastName: inbound.name.lastName }),
  };
}

/** How the sender of an inbound message is found among contacts (else created with it), per channel that receives. */
const INBOUND_ADDRESS: Record<InboxChannel, "email" | "phone" | "chatapp1ChatId"> = {
  email: "email",
  sms: "phone",
  chatapp1: "chatapp1ChatId",
  chatapp2: "phone",
};

const isCommandChannel = (channel: string): channel is CommandChannel =>
  (COMMAND_CHANNELS as readonly string[]).includes(channel);

/**
 * The contact an inbound message is from: the one a deep link's token
 * binds (chatapp1 `/start <token>`, `linked`), else the one with the
 * sender's address, else a new one with it (one, however many of its
 * first messages arrive together).
 */
async function inboundContact(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  channel: InboxChannel,
  inbound: Inbound,
): Promise<{ id: string; linked: boolean }> {
  if (inbound.linkToken) {
    const linked = await systemCall<{ id: string } | null>(broker, workspaceId, "contacts.linkChat", {
      token: inbound.linkToken,
      chatId: inbound.from,
    });
    if (linked) return { id: linked.id, linked: true };
  }
  const found = await systemCall<{ contactId: string }>(
    broker,
    workspaceId,
    "contacts.forAddress",
    senderAddress(channel, inbound),
  );
  return { id: found.contactId, linked: false };
}

/** The answer to a chat that a deep link has just bound to its contact. */
const LINK_WELCOME =
  "You are connected: our messages will reach you here. Send STOP at any time to stop them.";

/** The opt-out source (contract 7) a channel command records. */
const COMMAND_SOURCES: Record<CommandChannel, Record<"opt_out" | "opt_in", string>> = {
  sms: { opt_out: "sms_stop", opt_in: "sms_start" },
  chatapp1: { opt_out: "chat_command", opt_in: "chat_command" },
  chatapp2: { opt_out: "chat_command", opt_in: "chat_command" },
};
