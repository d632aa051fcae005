import type { LoggerInstance, ServiceBroker } from "moleculer";
import { COMMAND_CHANNELS, type CommandChannel, type InboxChannel } from "../../lib/channels";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import type { WorkspaceId } from "../../lib/tenancy";
import { DEFAULT_COMMANDS, matchCommand } from "./commands";
import { removeAttachments, type InboundAttachment } from "./inbound-mail";
import * as queue from "./inbound-queue.repo";
import type { ClaimedInbound, InboundEvent as Inbound, Unfiled } from "./inbound-queue.repo";
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

/** One pass: a claimed batch filed; answers how many rows it claimed. */
export async function fileInboundBatch(
  broker: ServiceBroker,
  logger: LoggerInstance,
  limit = INBOUND_BATCH,
): Promise<number> {
  const rows = await queue.claimInbound(broker.nodeID, limit, LEASE_SECONDS);
  if (!rows.length) return 0;
  const filed: string[] = [];
  const unfiled: Unfiled[] = [];
  await Promise.all(
    conversations(rows).map(async (messages) => {
      for (const [at, row] of messages.entries()) {
        try {
          const provider = await repo.providerForCallback(row.provider_id);
          // Gone since (its rows go with it, ON DELETE CASCADE): nothing to file it for.
          if (provider) await receiveInbound(broker, provider, row.inbound, row.attachments);
          filed.push(row.id);
        } catch (err) {
          const error = (err as Error)?.message ?? String(err);
          const giveUp = row.attempts >= MAX_ATTEMPTS;
          logger.warn(
            `Inbound ${row.id} (${row.conversation.replace(/\n/g, " ")}), try ${row.attempts}: ${giveUp ? "given up" : "filed again later"}: ${error}`,
          );
          if (giveUp) await removeAttachments(row.attachments).catch(() => undefined);
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
    }),
  );
  await queue.markFiled(broker.nodeID, filed);
  await queue.markUnfiled(broker.nodeID, unfiled);
  return rows.length;
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
    !command && !contact.linked && isServiceAvailable(broker, "inbox")
      ? await fileInInbox(broker, workspaceId, attachments, {
          channel,
          contactId: contact.id,
          providerId: provider.id,
          from: inbound.from,
          to: inbound.to,
          text: inbound.text,
          ...(inbound.subject !== undefined ? { subject: inbound.subject } : {}),
          providerMessageId: inbound.providerMessageId,
          references: inbound.references ?? [],
          ...(attachments.length ? { attachments } : {}),
        })
      : null;
  if (!thread) await removeAttachments(attachments);
  if (isServiceAvailable(broker, "events"))
    await systemCall(broker, workspaceId, "events.record", {
      type: `${channel}.message_received`,
      contactId: contact.id,
      metadata: {
        providerId: provider.id,
        threadId: thread?.threadId ?? null,
        from: inbound.from,
        to: inbound.to,
        text: inbound.text,
        ...(inbound.subject !== undefined ? { subject: inbound.subject } : {}),
        providerMessageId: inbound.providerMessageId,
      },
    });
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
): Promise<{ threadId: string }> {
  const filed = await systemCall<{ threadId: string; duplicate: boolean }>(
    broker,
    workspaceId,
    "inbox.receive",
    params,
  );
  if (filed.duplicate) await removeAttachments(attachments);
  return filed;
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
  const found = await systemCall<{ contactId: string }>(broker, workspaceId, "contacts.forAddress", {
    type: INBOUND_ADDRESS[channel],
    value: inbound.from,
    ...(channel === "chatapp1" && inbound.name?.firstName && { firstName: inbound.name.firstName }),
    ...(channel === "chatapp1" && inbound.name?.lastName && { lastName: inbound.name.lastName }),
  });
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
