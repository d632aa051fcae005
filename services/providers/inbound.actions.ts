import { requires } from "../../lib/access";
import { Readable } from "node:stream";
import { Type } from "@sinclair/typebox";
import { Errors, type ServiceBroker } from "moleculer";
import { audit } from "../../lib/audit";
import { config } from "../../lib/config";
import { newId } from "../../lib/crypto";
import { defineAction, defineMixin, type ServiceThis } from "../../lib/define-service";
import { invalidSignature, notFound, validationError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { stepPoller } from "../../lib/periodic-steps";
import { queueStatsAction } from "../../lib/queue-stats";
import { compileParamsChecker, unstorableInput } from "../../lib/schema";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import type { Poller } from "../../lib/worker";
import type { ReceivedFile } from "../../lib/uploads";
import type { ProviderChannel } from "../../lib/channels";
import type { ProviderEvent } from "./callbacks";
import {
  ATTACHMENT_LIMIT_BYTES,
  discardFiles,
  keepAttachments,
  MAX_ATTACHMENTS,
  readCallbackBody,
  removeAttachments,
  type CallbackBody,
} from "./inbound-mail";
import { fileInboundBatch } from "./inbound-filing";
import {
  acceptInbound as acceptInboundRow,
  dropFiledBefore,
  inboundQueueFigures,
  requeueFailedInbound,
  unfiledCount,
} from "./inbound-queue.repo";
import { handshake, openWindow } from "./chatapp2/chatapp2.actions";
import { chatapp2Results, chatapp2Schemas } from "./chatapp2/chatapp2.schemas";
import { readEvents, verifyCallback } from "./kinds";
import { checkCommands, DEFAULT_COMMANDS } from "./commands";
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

/** Broadcast when a webhook accepted inbound messages: every replica's filer wakes. */
const INBOUND_ACCEPTED_EVENT = "providers.inboundAccepted";
/** Filing passes in flight on a node (each a claimed batch). */
const FILER_WORKERS = 4;
/** How long a filed message's row is kept: a provider's retry within it stores nothing again. */
const FILED_KEPT_HOURS = 24;

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

/** What the mixin adds to the providers service's `this`: the filer of accepted inbound messages. */
interface InboundState {
  inboundFiler: Poller;
}

export const inboundActions = defineMixin<ServiceThis<InboundState>>({
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

    /** Internal (cron tick; in process, the filer's poller): one batch of accepted inbound messages filed. */
    fileInbound: defineAction({
      result: Type.Integer(),
      handler(ctx) {
        return fileInboundBatch(ctx.broker, this.logger);
      },
    }),

    /**
     * Internal (tests, operators): file until no accepted message is left
     * unfiled (this node's batches, and other nodes' leases run to their
     * end), or `timeoutMs` passed; answers how many are left.
     */
    drainInbound: defineAction({
      params: Type.Object({ timeoutMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })) }),
      result: Type.Integer(),
      async handler(ctx) {
        const deadline = Date.now() + (ctx.params.timeoutMs ?? 10_000);
        for (;;) {
          const claimed = await fileInboundBatch(ctx.broker, this.logger);
          const left = await unfiledCount();
          if (!left || Date.now() > deadline) return left;
          // Nothing this node could claim: others hold the rest, or it is due later.
          if (!claimed) await new Promise((resolve) => setTimeout(resolve, 20));
        }
      },
    }),

    /** Internal (the REPL's `retry-inbound`): the workspace's given-up inbound messages filed again; how many. */
    requeueFailedInbound: defineAction({
      result: Type.Object({ requeued: Type.Integer() }),
      async handler(ctx) {
        const requeued = await requeueFailedInbound(workspaceOf(ctx));
        if (requeued) inboundAccepted(ctx.broker);
        return { requeued };
      },
    }),

    /** Internal (timer, cron tick): filed messages' rows dropped after a day (a retry within it stores nothing). */
    sweepFiledInbound: defineAction({
      result: Type.Integer(),
      handler: () => dropFiledBefore(FILED_KEPT_HOURS),
    }),

    /** Internal (timer, the REPL's `queues`): the inbound queue's figures, into the queue gauges. */
    queueStats: queueStatsAction(async () => [await inboundQueueFigures()]),
  },

  events: {
    /** A webhook accepted inbound messages (here or on another replica): file them now. */
    [INBOUND_ACCEPTED_EVENT]() {
      this.inboundFiler.wake();
    },
  },

  created() {
    // Drains side by side: a pass waits for its batch's slowest conversation (a new thread's assignment and
    // auto-reply), so the next batches are claimed and filed meanwhile, at most FILER_WORKERS in flight.
    this.inboundFiler = stepPoller("providers.fileInbound", {
      logger: this.logger,
      metrics: this.broker.metrics,
      workers: FILER_WORKERS,
      pass: async () => (await fileInboundBatch(this.broker, this.logger)) > 0,
    });
  },

  started() {
    this.inboundFiler.start();
  },

  async stopped() {
    await this.inboundFiler.stop();
  },
});

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
  // A mail is one inbound event: the callback's files are its attachments, kept for the filer.
  let accepted = false;
  for (const text of fresh.filter((e): e is Inbound => e.kind === "inbound")) {
    await noteInbound?.(provider.workspace_id, text);
    accepted = (await acceptInbound(provider, text, files)) || accepted;
  }
  if (accepted) inboundAccepted(ctx.broker);
  await repo.markSeen(
    provider.id,
    fresh.flatMap((e) => (e.eventId ? [e.eventId] : [])),
  );
  return { received: true as const };
}

/**
 * An inbound message stored for the filer (inbound-filing.ts), once per
 * provider message id: false when a retry brought it again (its attachments
 * go again).
 */
async function acceptInbound(
  provider: CallbackProvider,
  inbound: Inbound,
  files: ReceivedFile[],
): Promise<boolean> {
  const attachments = files.length ? await keepAttachments(provider.workspace_id, files) : [];
  const stored = await acceptInboundRow({
    workspaceId: provider.workspace_id,
    providerId: provider.id,
    dedupeKey: inbound.providerMessageId ?? inbound.eventId ?? newId(),
    conversation: `${provider.workspace_id}\n${provider.channel}\n${inbound.from}`,
    inbound,
    attachments,
  }).catch(async (err: unknown) => {
    await removeAttachments(attachments);
    throw err;
  });
  if (!stored) await removeAttachments(attachments);
  return stored;
}

/** When this process last told the other replicas of accepted messages. */
let toldOthersAt = 0;
/** Replicas are told at most this often: the local filer is woken at once, the others help under load. */
const TELL_OTHERS_EVERY_MS = 50;

/** Wake this process's filer now, and (at most every TELL_OTHERS_EVERY_MS) the other replicas'. */
function inboundAccepted(broker: ServiceBroker): void {
  const now = Date.now();
  if (now - toldOthersAt < TELL_OTHERS_EVERY_MS) void broker.broadcastLocal(INBOUND_ACCEPTED_EVENT);
  else {
    toldOthersAt = now;
    void broker.broadcast(INBOUND_ACCEPTED_EVENT);
  }
}

/** A body the gateway parsed (JSON or a form): its exact text, kept for the signature. */
const formBody = (ctx: AppContext) => () => Promise.resolve({ rawBody: ctx.meta.rawBody ?? "", files: [] });
