import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { config } from "../../lib/config";
import { defineAction, defineService, type ServiceThis } from "../../lib/define-service";
import { found, invalidState, invalidToken } from "../../lib/errors";
import { idempotent } from "../../lib/idempotency";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { queueStatsAction } from "../../lib/queue-stats";
import { stepPoller } from "../../lib/periodic-steps";
import type { Poller } from "../../lib/worker";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { trackingSignatureValid } from "./links";
import * as repo from "./messages.repo";
import { retentionActions } from "../../lib/retention";
import { results, schemas } from "./messages.schemas";
import { preferenceActions } from "./preferences.actions";
import { closeHttp } from "../providers/clients";
import { PROVIDERS_CHANGED_EVENT } from "../providers/for-send";
import { applyProviderEvents } from "./provider-events";
import { dropStalePending } from "./provider-events.repo";
import { subscriptionsByIdForSend } from "../push/for-send";
import { systemCall } from "../../lib/system-call";
import { notificationOf, pushToAll } from "./push";
import { capState, createMessage, enqueueMessages } from "./send";
import { errorAnswer, sendNow } from "./send-now";
import { repliedToKeys } from "./replied-to";
import { Sender, senderOf, type WorkspaceInfo } from "./sender";
import { countEngagement, isMachine, PIXEL, recordActivity, SCANNER_BURST_MS } from "./tracking";

const WS = "/workspaces/:workspaceId";
const tags = ["Messages"];
const read = requires("campaigns.read");
const write = requires("campaigns.write");

/** How long a provider callback waits for the record of its send before it is dropped. */
const PENDING_CALLBACK_DAYS = 7;

/** The messages service's `this`: its sender and send queue (set in `created`) and its methods. */
export type MessagesService = ServiceThis<{
  sender: Sender;
  sendQueue: Poller;
  now(): Date;
  wake(): void;
  open(ctx: AppContext, messageId: string): Promise<void>;
  clickTarget(messageId: string, code: string): Promise<string>;
  click(ctx: AppContext, messageId: string, code: string): Promise<string>;
}>;

/** Messages: the one send path (checks, durable queue, provider), tracking and short links. */
export default defineService<MessagesService>({
  name: "messages",
  mixins: [DatabaseMixin, preferenceActions, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    // Internal (retention): countBefore and purgeBefore over the workspace's messages (push deliveries with them) (lib/retention.ts).
    ...retentionActions(repo.countBefore, repo.deleteBefore),

    /**
     * Send a message: 202 with it, `queued` (its send follows, after `sendAt`)
     * or `suppressed` with the reason. `Idempotency-Key` replays the first
     * answer for 24 hours. campaigns.write.
     */
    create: defineAction({
      rest: `POST ${WS}/messages`,
      openapi: {
        tags,
        summary: "Send a message (checked, queued; the send follows)",
        parameters: [
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            schema: { type: "string", minLength: 1, maxLength: 255 },
            description:
              "Retries with the same key and body get the first answer (`Idempotent-Replayed: true`) for 24 h",
          },
        ],
      },
      ...write,
      params: schemas.create,
      status: 202,
      result: results.message,
      async handler(this: MessagesService, ctx) {
        const message = await idempotent(ctx, "messages.create", 202, async () =>
          repo.messageView(await createMessage(ctx, ctx.params, this.now())),
        );
        if (message.status === "queued") this.wake();
        return message;
      },
    }),

    /** Messages, newest first; filters `status, channel, contactId, campaignId, templateId, from, to`. campaigns.read. */
    list: defineAction({
      rest: `GET ${WS}/messages`,
      openapi: { tags, summary: "List messages" },
      ...read,
      params: schemas.list,
      result: results.list,
      handler: (ctx) => {
        const { page: _p, limit: _l, workspaceId: _w, ...filter } = ctx.params;
        return repo.listMessages(workspaceOf(ctx), pageRequest(ctx.params), filter);
      },
    }),

    /** One message with what was sent and its status history. campaigns.read. */
    get: defineAction({
      rest: `GET ${WS}/messages/:messageId`,
      openapi: { tags, summary: "Get a message with its content and history" },
      ...read,
      params: schemas.get,
      result: results.detail,
      handler: async (ctx) => found(await repo.getMessage(workspaceOf(ctx), ctx.params.messageId), "Message"),
    }),

    /**
     * Open pixel (`?s=`): always the 43-byte GIF, counted when `s` verifies.
     * Click (`?u={code}&s=`): 302 to the link's URL when `s` verifies, else
     * 400 INVALID_TOKEN (never an open redirect). Both recorded through
     * `events.record`; machine opens and clicks carry `metadata.machine: true`. A HEAD records nothing.
     */
    track: defineAction({
      rest: "GET /messages/:messageId/track",
      auth: "public",
      openapi: { tags, summary: "Open pixel and click redirect (signed)", responses: results.pixel },
      params: schemas.track,
      async handler(this: MessagesService, ctx) {
        const { messageId, u, s } = ctx.params;
        // HEAD is safe (link checkers and previews send it): it answers as GET and records nothing.
        const head = ctx.meta.method === "HEAD";
        if (u !== undefined) {
          if (!trackingSignatureValid(messageId, u, s))
            throw invalidToken("The link's signature does not verify");
          const url = head ? await this.clickTarget(messageId, u) : await this.click(ctx, messageId, u);
          ctx.meta.$statusCode = 302;
          ctx.meta.$location = url;
          return null;
        }
        ctx.meta.$responseType = "image/gif";
        ctx.meta.$responseHeaders = { "Cache-Control": "no-store" };
        if (!head && trackingSignatureValid(messageId, "", s)) await this.open(ctx, messageId);
        return PIXEL;
      },
    }),

    /** Short links with their clicks and unique clicks; filters `campaignId`, `templateId`. campaigns.read. */
    shortLinks: defineAction({
      rest: `GET ${WS}/short-links`,
      openapi: { tags, summary: "List short links with clicks" },
      ...read,
      params: schemas.shortLinks,
      result: results.shortLinks,
      handler: (ctx) => {
        const { campaignId, templateId } = ctx.params;
        return repo.listShortLinks(workspaceOf(ctx), pageRequest(ctx.params), { campaignId, templateId });
      },
    }),

    /** Internal (templates.sendTest): send rendered content now, unchecked and unrecorded. */
    sendTest: defineAction({
      params: schemas.sendTest,
      result: results.sendTest,
      async handler(this: MessagesService, ctx) {
        const ws = workspaceOf(ctx);
        const { channel, to, content } = ctx.params;
        const workspace = (await ctx.call("workspaces.get", { workspaceId: ws })) as WorkspaceInfo;
        const sender = senderOf(content, workspace);
        const client = await this.sender.providers.clientFor(ws, channel, null);
        return {
          results: await Promise.all(
            to.map(async (address, i) => {
              try {
                await client.send({
                  messageId: `test-${Date.now()}-${i}`,
                  channel,
                  to: address,
                  content,
                  ...sender,
                  headers: {},
                });
                return { to: address, status: "sent" as const, error: null };
              } catch (err) {
                return { to: address, status: "failed" as const, error: (err as Error).message };
              }
            }),
          ),
        };
      },
    }),

    /**
     * Internal (`POST {ws}/push/test`): push a notification now to the named
     * subscriptions, unchecked and unrecorded, each through its type's
     * provider; a gone one is deactivated.
     */
    pushTest: defineAction({
      params: schemas.pushTest,
      result: results.sendTest,
      async handler(this: MessagesService, ctx) {
        const ws = workspaceOf(ctx);
        const [targets, clients] = await Promise.all([
          subscriptionsByIdForSend(ws, ctx.params.subscriptionIds),
          this.sender.providers.pushClientsFor(ws),
        ]);
        const attempts = await pushToAll(
          targets,
          clients,
          notificationOf(`test-${Date.now()}`, ctx.params.content),
        );
        const gone = attempts.flatMap((a) => (a.outcome.status === "gone" ? [a.target.subscriptionId] : []));
        if (gone.length) await systemCall(ctx, ws, "push.deactivate", { subscriptionIds: gone });
        return {
          results: attempts.map(({ target, outcome }) =>
            outcome.status === "accepted"
              ? { to: target.subscriptionId, status: "sent" as const, error: null }
              : {
                  to: target.subscriptionId,
                  status: "failed" as const,
                  error: `${outcome.status}: ${outcome.code}`,
                },
          ),
        };
      },
    }),

    /**
     * Internal (broadcasts, journeys): a template to up to 1,000 contacts of
     * the workspace in meta, each checked as `POST {ws}/messages` would,
     * with one query per check. Unknown contacts and ones without an
     * address on the channel are skipped, with the reason.
     */
    enqueue: defineAction({
      params: schemas.enqueue,
      result: results.enqueue,
      async handler(this: MessagesService, ctx) {
        const result = await enqueueMessages(ctx, this.now());
        if (result.queued) this.wake();
        return result;
      },
    }),

    /** Internal (journey steps that wait for the cap): whether `settings.frequencyCap` holds a contact's send now, and until when. */
    capState: defineAction({
      params: schemas.capState,
      result: results.capState,
      handler(this: MessagesService, ctx) {
        return capState(ctx, this.now());
      },
    }),

    /**
     * Internal (inbox replies): send one message at once through the one send
     * path (checks, rendering, provider) and answer it with its outcome:
     * `sent`, `failed` (no retry: the caller may send again) or `suppressed`.
     */
    sendNow: defineAction({
      params: schemas.sendNow,
      result: results.message,
      async handler(this: MessagesService, ctx) {
        const [answer] = await sendNow(this.sender, ctx, [ctx.params], this.now());
        if ("error" in answer) throw answer.error;
        return answer.message;
      },
    }),

    /**
     * Internal (inbox replies sent together): `sendNow` for many messages of
     * the workspace, sent as one batch; each answers its message, or why it
     * was refused (a refusal is that send's own).
     */
    sendNowBatch: defineAction({
      params: schemas.sendNowBatch,
      result: results.sendNowBatch,
      async handler(this: MessagesService, ctx) {
        const answers = await sendNow(this.sender, ctx, ctx.params.sends, this.now());
        return answers.map((answer) =>
          "error" in answer ? { error: errorAnswer(answer.error) } : { message: answer.message },
        );
      },
    }),

    /** Internal (inbox threading): the workspace's sent messages a mail's In-Reply-To and References name. */
    repliedTo: defineAction({
      params: schemas.repliedTo,
      result: results.repliedTo,
      handler: (ctx) => repo.messagesRepliedTo(workspaceOf(ctx), repliedToKeys(ctx.params.references)),
    }),

    /** Internal (templates' A/B figures): sent, opened and clicked per variant. */
    variantStats: defineAction({
      params: schemas.variantStats,
      result: results.variantStats,
      handler: (ctx) => repo.variantStats(workspaceOf(ctx), ctx.params.templateId),
    }),

    /** Internal (provider callbacks): delivery, bounce, complaint, open and click reports for the workspace's messages. */
    providerEvents: defineAction({
      params: schemas.providerEvents,
      result: results.providerEvents,
      handler: (ctx) =>
        applyProviderEvents(ctx.broker, workspaceOf(ctx), ctx.params.providerId, ctx.params.events),
    }),

    /** Internal (timer, cron tick): drop provider callbacks kept a week without their send. */
    sweepProviderCallbacks: defineAction({
      result: Type.Integer(),
      handler: () => dropStalePending(PENDING_CALLBACK_DAYS),
    }),

    /** Internal (cron tick; in process, the service's poller): one pass of the send queue. */
    processDue: defineAction({
      params: schemas.processDue,
      result: results.processDue,
      handler(this: MessagesService, ctx) {
        return this.sender.pass(ctx.params.limit);
      },
    }),
    /** Internal (timer, operators' `queues`): the send queue's figures, set in this process's gauges too. */
    queueStats: queueStatsAction(async () => [await repo.sendQueueFigures()]),

    /**
     * Internal (operators' `retry-message`): a failed message of the workspace
     * back in the queue, due now, attempts reset, `operator_retry` in its
     * history; 404 for none, 409 INVALID_STATE for a message not failed.
     */
    requeueFailed: defineAction({
      params: schemas.requeueFailed,
      result: results.detail,
      async handler(this: MessagesService, ctx) {
        const workspaceId = workspaceOf(ctx);
        if (!(await repo.requeueFailed(workspaceId, ctx.params.messageId))) {
          const message = found(await repo.getMessage(workspaceId, ctx.params.messageId), "Message");
          throw invalidState(`Only a failed message can be retried; this one is ${message.status}`);
        }
        this.wake();
        return found(await repo.getMessage(workspaceId, ctx.params.messageId), "Message");
      },
    }),
  },

  events: {
    /** A workspace's providers changed: this process reads (and opens) them again at its next send. */
    [PROVIDERS_CHANGED_EVENT](ctx: AppContext<{ workspaceId: WorkspaceId }>) {
      this.sender.providers.forget(ctx.params.workspaceId);
    },
  },

  methods: {
    /** The clock of the send checks (quiet hours, the cap's period); tests replace it. */
    now(): Date {
      return new Date();
    },

    /** Drain the send queue now (a message was queued here). */
    wake() {
      this.sendQueue.wake();
    },

    async open(ctx: AppContext, messageId: string) {
      const message = await repo.getMessageById(messageId);
      if (!message) return;
      const machine = isMachine("open", ctx.meta, message.sent_at, new Date());
      const engaged = machine ? null : await repo.recordOpen(messageId);
      if (engaged) countEngagement(this.broker, engaged);
      const row = machine ? message : engaged;
      if (row) await recordActivity(this.broker, row, "message.open", { machine });
    },

    async clickTarget(messageId: string, code: string): Promise<string> {
      const message = found(await repo.getMessageById(messageId), "Message");
      return found(await repo.linkUrl(message.workspace_id, code), "Link");
    },

    async click(ctx: AppContext, messageId: string, code: string): Promise<string> {
      const message = found(await repo.getMessageById(messageId), "Message");
      const agentMachine = isMachine("click", ctx.meta, message.sent_at, new Date());
      const link = found(
        await repo.recordLinkClick(
          message.workspace_id,
          code,
          messageId,
          message.contact_id,
          SCANNER_BURST_MS,
          agentMachine,
        ),
        "Link",
      );
      const machine = agentMachine || link.burst;
      const engaged = machine ? null : await repo.recordClick(messageId);
      if (engaged) countEngagement(this.broker, engaged);
      const row = machine ? message : engaged;
      if (row) await recordActivity(this.broker, row, "message.click", { machine, url: link.url });
      return link.url;
    },
  },

  created() {
    this.sender = new Sender(this.broker, this.logger);
    // MESSAGE_WORKERS drains side by side until nothing is due: one renders while another waits on the database
    // (each pass claims its own rows).
    this.sendQueue = stepPoller("messages.processDue", {
      logger: this.logger,
      metrics: this.broker.metrics,
      workers: config().messageWorkers,
      pass: async () => {
        const pass = await this.sender.pass();
        return pass.sent + pass.failed + pass.retried + pass.suppressed > 0;
      },
    });
  },

  started() {
    this.sendQueue.start();
  },

  async stopped() {
    // The claim made ahead goes back to the queue, the passes under way hand back what they have not
    // started, then the loop ends with them.
    await this.sender.stop();
    await this.sendQueue.stop();
    await this.sender.providers.close();
    await closeHttp();
  },
});
