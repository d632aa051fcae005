import { requires } from "../../lib/access";
import { Readable } from "node:stream";
import { Errors, type ServiceBroker } from "moleculer";
import { audit } from "../../lib/audit";
import { config } from "../../lib/config";
import { defineAction } from "../../lib/define-service";
import { invalidSignature, notFound, validationError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { isServiceAvailable } from "../../lib/registry";
import { compileParamsChecker, unstorableInput } from "../../lib/schema";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import type { ReceivedFile } from "../../lib/uploads";
import {
  COMMAND_CHANNELS,
  type CommandChannel,
  type InboxChannel,
  type ProviderChannel,
} from "../../lib/channels";
import type { ProviderEvent } from "./callbacks";
import {
  ATTACHMENT_LIMIT_BYTES,
  discardFiles,
  keepAttachments,
  MAX_ATTACHMENTS,
  readCallbackBody,
  removeAttachments,
  type CallbackBody,
  type InboundAttachment,
} from "./inbound-mail";
import { handshake, openWindow } from "./chatapp2/chatapp2.actions";
import { chatapp2Results, chatapp2Schemas } from "./chatapp2/chatapp2.schemas";
import { readEvents, verifyCallback } from "./kinds";
import { SMSAPI1_ANSWERED_KEYWORDS } from "./smsapi1/client";
import { checkCommands, DEFAULT_COMMANDS, matchCommand } from "./commands";
import { commandsChanged } from "./chatapp1/connect";
import { openedConfig } from "./credentials";
import * as repo from "./providers.repo";
import type { CallbackProvider } from "./providers.repo";
import { commandResults, commandSchemas } from "./providers.schemas";

/**
 * What comes back from providers (contract 5): signed callbacks that move
 * messages (delivered, bounced, complained; applied by messages, which owns
 * them) and inbound texts that find or create their contact, enter the
 * activity chain, and may be a channel command (STOP, START, HELP), answered
 * through the same provider.
 */

const WS = "/workspaces/:workspaceId/channel-commands";
const tags = ["Providers"];
const manage = requires("providers.manage");

type Inbound = Extract<ProviderEvent, { kind: "inbound" }>;

const checkQuery = compileParamsChecker(commandSchemas.callback);

/** A stream route's query, checked as the validator middleware checks any other route's params. */
function checkedQuery(query: object): { providerId: string } {
  const issue = unstorableInput(query);
  if (issue) throw validationError(`${issue.field || "query"} ${issue.message}`, [issue]);
  const result = checkQuery(query, false);
  if (result !== true)
    throw new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", result);
  return query as { providerId: string };
}

const emailWebhooksOpenApi = {
  tags,
  summary: "Email provider callbacks and forwarded mails (signed as each provider signs)",
  description:
    `emailapi1 and emailapi2 callbacks as JSON; mails an emailapi2 route forwards as a form or multipart, ` +
    `whose attachments are kept (at most ${MAX_ATTACHMENTS}, ${ATTACHMENT_LIMIT_BYTES / 1024 / 1024} MiB each; ` +
    `others are listed on the message as dropped).`,
  parameters: [{ name: "providerId", in: "query", required: true, schema: { type: "string" } }],
  requestBody: {
    required: true,
    content: {
      "application/json": { schema: { type: "object" } },
      "application/x-www-form-urlencoded": { schema: { type: "object" } },
      "multipart/form-data": { schema: { type: "object" } },
    },
  },
};

export const inboundActions = {
  actions: {
    /** The workspace's channel commands (the defaults until replaced). providers.manage. */
    getCommands: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "Channel commands (STOP, START, HELP and the workspace's own)" },
      ...manage,
      params: commandSchemas.get,
      result: commandResults.commands,
      handler: async (ctx) => ({ commands: (await repo.getCommands(workspaceOf(ctx))) ?? DEFAULT_COMMANDS }),
    }),

    /** Replace the channel commands; one keyword answers one way per channel. providers.manage. */
    putCommands: defineAction({
      rest: `PUT ${WS}`,
      openapi: { tags, summary: "Replace the channel commands" },
      ...manage,
      params: commandSchemas.put,
      result: commandResults.commands,
      async handler(ctx) {
        const commands = checkCommands(ctx.params.commands);
        await repo.putCommands(workspaceOf(ctx), commands);
        await commandsChanged(ctx, workspaceOf(ctx));
        await audit(
          ctx,
          "channel_commands.replaced",
          { type: "channel_commands", id: null },
          {
            keywords: commands.map((c) => c.keyword),
          },
        );
        return { commands };
      },
    }),

    /**
     * Delivery, bounce, complaint, open and click callbacks of emailapi1 and
     * emailapi2, and mails an emailapi2 route forwards (with their
     * attachments: a stream route, so files reach this node, not the
     * gateway's memory). Public (provider signature).
     */
    emailWebhooks: defineAction({
      rest: { method: "POST", path: "/providers/email/webhooks", type: "stream" },
      auth: "public",
      rawBody: true,
      openapi: emailWebhooksOpenApi,
      result: commandResults.callback,
      async handler(ctx) {
        const body = ctx.params as unknown;
        if (!(body instanceof Readable))
          throw new Error("providers.emailWebhooks takes the request stream (a stream route)");
        let files: ReceivedFile[] = [];
        try {
          const { providerId } = checkedQuery((ctx.meta as { $params?: object }).$params ?? {});
          return await receive(ctx, "email", providerId, async () => {
            const read = await readCallbackBody(body, ctx.meta.contentType ?? "");
            files = read.files;
            return read;
          });
        } finally {
          // A refusal before the body was read still reads it to its end, so the provider gets the answer.
          body.resume();
          await discardFiles(files);
        }
      },
    }),

    /** Status callbacks and inbound texts of smsapi1 and smsapi2. Public (provider signature). */
    smsWebhooks: defineAction({
      rest: "POST /providers/sms/webhooks",
      auth: "public",
      rawBody: true,
      openapi: { tags, summary: "SMS provider callbacks and inbound texts (signed as each provider signs)" },
      params: commandSchemas.callback,
      result: commandResults.callback,
      handler(ctx) {
        return receive(ctx, "sms", ctx.params.providerId, formBody(ctx));
      },
    }),

    /** Telegram updates of the chatapp1 bot (the webhook's secret header). Public (provider signature). */
    chatapp1Webhooks: defineAction({
      rest: "POST /providers/chatapp1/webhooks",
      auth: "public",
      rawBody: true,
      openapi: { tags, summary: "chatapp1 (Telegram) updates, carrying the webhook's secret token" },
      params: commandSchemas.callback,
      result: commandResults.callback,
      handler(ctx) {
        return receive(ctx, "chatapp1", ctx.params.providerId, formBody(ctx));
      },
    }),

    /** Inbound messages and delivery/read statuses of chatapp2 (X-Hub-Signature-256). Public (provider signature). */
    chatapp2Webhooks: defineAction({
      rest: "POST /providers/chatapp2/webhooks",
      auth: "public",
      rawBody: true,
      openapi: {
        tags,
        summary: "chatapp2 callbacks: inbound messages and statuses (signed with the app secret)",
      },
      params: commandSchemas.callback,
      result: commandResults.callback,
      handler(ctx) {
        return receive(ctx, "chatapp2", ctx.params.providerId, formBody(ctx), openWindow);
      },
    }),

    /** Meta's webhook verification: `hub.verify_token` = the provider's verifyToken → its `hub.challenge`. Public. */
    chatapp2Handshake: defineAction({
      rest: "GET /providers/chatapp2/webhooks",
      auth: "public",
      openapi: {
        tags,
        summary: "chatapp2 webhook verification (the challenge back as text/plain, else 403)",
        responses: chatapp2Results.handshake,
      },
      params: chatapp2Schemas.handshake,
      handler: (ctx) => handshake(ctx),
    }),
  },
};

/**
 * A callback: 404 for a provider that is not one of the channel's with
 * callbacks, 401 INVALID_SIGNATURE unless the provider signed it; each event
 * applied once (a retried callback's events are recognised by their ids).
 */
async function receive(
  ctx: AppContext,
  channel: ProviderChannel,
  providerId: string,
  /** The body, read once the provider is known. */
  readBody: () => Promise<CallbackBody>,
  /** What the channel keeps of each new inbound message before it is received (chatapp2's window). */
  noteInbound?: (workspaceId: WorkspaceId, inbound: Inbound) => Promise<void>,
) {
  const provider = await repo.providerForCallback(providerId);
  if (!provider || provider.channel !== channel || provider.type === "smtp") throw notFound("Provider");
  const { rawBody, files } = await readBody();
  const callback = {
    rawBody,
    headers: ctx.meta.requestHeaders ?? {},
    url: `${config().publicUrl}${ctx.meta.requestUrl ?? ""}`,
  };
  if (!verifyCallback(provider.type, callback, openedConfig(provider.type, provider.config)))
    throw invalidSignature("The provider's signature does not verify");
  const events = readEvents(provider.type, callback.rawBody);
  const seen = await repo.seenEvents(
    provider.id,
    events.flatMap((e) => (e.eventId ? [e.eventId] : [])),
  );
  const fresh = events.filter((e) => !e.eventId || !seen.has(e.eventId));
  const reports = fresh.filter((e): e is Exclude<ProviderEvent, Inbound> => e.kind !== "inbound");
  if (reports.length)
    await systemCall(ctx, provider.workspace_id, "messages.providerEvents", {
      providerId: provider.id,
      events: reports,
    });
  // A mail is one inbound event: the callback's files are its attachments.
  for (const text of fresh.filter((e): e is Inbound => e.kind === "inbound")) {
    await noteInbound?.(provider.workspace_id, text);
    await receiveInbound(ctx.broker, provider, text, files);
  }
  await repo.markSeen(
    provider.id,
    fresh.flatMap((e) => (e.eventId ? [e.eventId] : [])),
  );
  return { received: true as const };
}

/** A body the gateway parsed (JSON or a form): its exact text, kept for the signature. */
const formBody = (ctx: AppContext) => () => Promise.resolve({ rawBody: ctx.meta.rawBody ?? "", files: [] });

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
async function receiveInbound(
  broker: ServiceBroker,
  provider: CallbackProvider,
  inbound: Inbound,
  /** A mail's attachments, received (kept only when the mail is filed in the inbox). */
  files: ReceivedFile[],
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
      ? await fileInInbox(broker, workspaceId, files, (attachments) => ({
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
        }))
      : null;
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
 * The message into its inbox conversation with its attachments kept; the
 * files go again when the inbox holds no message for them (the provider
 * delivered this one before, or filing it failed).
 */
async function fileInInbox(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  files: ReceivedFile[],
  params: (attachments: InboundAttachment[]) => Record<string, unknown>,
): Promise<{ threadId: string }> {
  const attachments = await keepAttachments(workspaceId, files);
  try {
    const filed = await systemCall<{ threadId: string; duplicate: boolean }>(
      broker,
      workspaceId,
      "inbox.receive",
      params(attachments),
    );
    if (filed.duplicate) await removeAttachments(attachments);
    return filed;
  } catch (err) {
    await removeAttachments(attachments);
    throw err;
  }
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
