import { Type } from "@sinclair/typebox";
import { actingUserId, audit } from "../../lib/audit";
import { countWebhookDeliveries } from "../../lib/business-metrics";
import { config } from "../../lib/config";
import {
  DOMAIN_EVENTS_CHANNEL,
  factsOf,
  handleFacts,
  type DomainEnvelope,
  type DomainEvent,
} from "../../lib/domain-events";
import { defineAction, defineService, type ServiceThis } from "../../lib/define-service";
import { conflict, fieldError, found, notFound, notRetryable } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { queueStatsAction } from "../../lib/queue-stats";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { BackgroundMixin } from "../../mixins/background";
import { OutboxRelayMixin } from "../../mixins/outbox-relay";
import { attempt, Dispatcher, outcomeOf } from "./dispatcher";
import { receiveInbound, REPLAY_WINDOW_SECONDS } from "./inbound";
import { seal } from "../../lib/secret-box";
import { newSecret } from "./signature";
import { guardEnabled, resolveTarget, TargetRefused } from "./url-guard";
import * as repo from "./endpoints.repo";
import * as deliveriesRepo from "./deliveries.repo";
import { retentionActions } from "../../lib/retention";
import * as inboundRepo from "./inbound.repo";
import { DeliverySchema, EndpointSchema, results, schemas, SuccessSchema } from "./webhooks.schemas";

/** An OUTBOUND url must be http(s) and, in production, not a private target (400 otherwise). */
async function checkTarget(url: string): Promise<void> {
  try {
    await resolveTarget(url, guardEnabled());
  } catch (err) {
    if (err instanceof TargetRefused) throw fieldError("url", err.message.replace(/^url /, ""));
    throw err;
  }
}

/** Webhook endpoints, the inbound receiver, the outbound fan-out and its dispatcher, deliveries. */
/** The webhooks service's `this`: its delivery dispatcher (set in `created`). */
type WebhooksService = ServiceThis<{ dispatcher: Dispatcher }>;

export default defineService<WebhooksService>({
  name: "webhooks",
  mixins: [DatabaseMixin, OutboxRelayMixin, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    // Internal (retention): countBefore and purgeBefore over the workspace's webhook deliveries (lib/retention.ts).
    ...retentionActions(deliveriesRepo.countBefore, deliveriesRepo.deleteBefore),

    /** Endpoints with `_count.deliveries`; never their secrets. Session. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/webhooks",
      auth: "session",
      params: schemas.list,
      result: results.list,
      openapi: { tags: ["Webhooks"], summary: "List webhook endpoints" },
      handler: (ctx) => repo.listEndpoints(workspaceOf(ctx)),
    }),

    /** Create an endpoint; the answer carries its `secret`, shown only here. Session + ADMIN. */
    create: defineAction({
      rest: "POST /workspaces/:workspaceId/webhooks",
      auth: "session",
      role: "ADMIN",
      params: schemas.create,
      status: 201,
      result: EndpointSchema,
      openapi: { tags: ["Webhooks"], summary: "Create a webhook endpoint (secret returned once)" },
      async handler(ctx) {
        const direction = ctx.params.direction ?? "OUTBOUND";
        const url: string | null = ctx.params.url || null;
        if (direction === "OUTBOUND") {
          if (!url) throw fieldError("url", "is required for an OUTBOUND endpoint");
          await checkTarget(url);
        }
        const secret = newSecret();
        const endpoint = await repo.insertEndpoint(workspaceOf(ctx), {
          name: ctx.params.name ?? null,
          url,
          events: ctx.params.events ?? [],
          direction,
          secretSealed: seal(secret),
          createdBy: actingUserId(ctx),
        });
        await audit(
          ctx,
          "webhook.created",
          { type: "webhook", id: endpoint.id },
          {
            name: endpoint.name,
            url: endpoint.url,
            direction,
            events: endpoint.events,
          },
        );
        return { ...endpoint, _count: { deliveries: 0 }, secret };
      },
    }),

    /** Change name, url, events or active. Session + ADMIN. */
    update: defineAction({
      rest: "PATCH /workspaces/:workspaceId/webhooks/:webhookId",
      auth: "session",
      role: "ADMIN",
      params: schemas.update,
      result: EndpointSchema,
      openapi: { tags: ["Webhooks"], summary: "Update a webhook endpoint" },
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        const existing = found(await repo.findEndpoint(workspaceId, ctx.params.webhookId), "Webhook");
        const { name, url, events, active } = ctx.params;
        if (url !== undefined && existing.direction === "OUTBOUND") await checkTarget(url);
        const endpoint = found(
          await repo.updateEndpoint(workspaceId, existing.id, { name, url, events, active }),
          "Webhook",
        );
        const changes = { name, url, events, active };
        await audit(
          ctx,
          "webhook.updated",
          { type: "webhook", id: endpoint.id },
          {
            fields: Object.keys(changes).filter((k) => changes[k as keyof typeof changes] !== undefined),
            ...(active !== undefined ? { active } : {}),
          },
        );
        return endpoint;
      },
    }),

    /** Delete an endpoint and all its deliveries. Session + ADMIN. */
    remove: defineAction({
      rest: "DELETE /workspaces/:workspaceId/webhooks/:webhookId",
      auth: "session",
      role: "ADMIN",
      params: schemas.remove,
      result: SuccessSchema,
      openapi: { tags: ["Webhooks"], summary: "Delete a webhook endpoint and its deliveries" },
      async handler(ctx) {
        if (!(await repo.deleteEndpoint(workspaceOf(ctx), ctx.params.webhookId))) throw notFound("Webhook");
        await audit(ctx, "webhook.deleted", { type: "webhook", id: ctx.params.webhookId });
        return { success: true as const };
      },
    }),

    /** Delivery records, newest first, paginated (limit max 100). Session. */
    deliveries: defineAction({
      rest: "GET /workspaces/:workspaceId/webhooks/deliveries",
      auth: "session",
      params: schemas.deliveries,
      result: results.deliveries,
      openapi: { tags: ["Webhooks"], summary: "List webhook deliveries" },
      handler(ctx) {
        const { endpointId, success, event } = ctx.params;
        return deliveriesRepo.listDeliveries(
          workspaceOf(ctx),
          { endpointId, success, event },
          pageRequest(ctx.params),
        );
      },
    }),

    /** Send an OUTBOUND delivery again now (same id, next attempt number); 400 NOT_RETRYABLE for INBOUND. Session + ADMIN. */
    retryDelivery: defineAction({
      rest: "POST /workspaces/:workspaceId/webhooks/deliveries/:deliveryId/retry",
      auth: "session",
      role: "ADMIN",
      params: schemas.retry,
      result: DeliverySchema,
      openapi: { tags: ["Webhooks"], summary: "Retry an outbound delivery now" },
      async handler(this: WebhooksService, ctx) {
        const workspaceId = workspaceOf(ctx);
        const delivery = found(
          await deliveriesRepo.findDelivery(workspaceId, ctx.params.deliveryId),
          "Delivery",
        );
        if (delivery.direction !== "OUTBOUND") throw notRetryable("Only OUTBOUND deliveries can be retried");
        const claimed = await deliveriesRepo.claimOne(
          workspaceId,
          delivery.id,
          this.broker.nodeID,
          config().webhookLeaseMs,
        );
        if (!claimed) throw conflict("This delivery is being sent right now");
        const { result } = await attempt(this.dispatcher.sender, claimed, config().webhookRetryDelaysMs, {
          scheduleRetries: false,
        });
        await deliveriesRepo.recordAttempts([result], { durable: true });
        countWebhookDeliveries(this.broker.metrics, outcomeOf(result));
        await audit(
          ctx,
          "webhook.delivery.retried",
          { type: "webhook_delivery", id: delivery.id },
          { attempt: result.attempt },
        );
        return deliveriesRepo.toDelivery(
          found(await deliveriesRepo.findDelivery(workspaceId, delivery.id), "Delivery"),
        );
      },
    }),

    /** Receive an event from a customer system, signed with the endpoint secret. Public (signature). */
    inbound: defineAction({
      rest: "POST /webhooks/inbound/:endpointId",
      auth: "public",
      rawBody: true,
      params: schemas.inbound,
      result: results.inbound,
      openapi: {
        tags: ["Webhooks"],
        summary: "Inbound webhook (X-Webhook-Signature: hex HMAC-SHA256 of the raw body)",
      },
      handler(ctx) {
        return receiveInbound(ctx, ctx.params);
      },
    }),

    /** Internal: one pass of the outbound queue (cron tick; in process, the dispatcher's own poller). */
    dispatchDue: defineAction({
      result: results.dispatchDue,
      handler(this: WebhooksService) {
        return this.dispatcher.runOnce();
      },
    }),

    /** Internal (timer, operators' `queues`): the outbound queue's figures, set in this process's gauges too. */
    queueStats: queueStatsAction(async () => [await deliveriesRepo.queueFiguresOfDeliveries()]),

    /** Internal (timer, cron tick): forget inbound signatures older than the replay window; answers how many. */
    pruneReplays: defineAction({
      result: Type.Integer(),
      handler: () => inboundRepo.pruneReplays(REPLAY_WINDOW_SECONDS),
    }),
  },

  channels: {
    /** Outbound fan-out: one delivery per domain event and subscribed active OUTBOUND endpoint. */
    [DOMAIN_EVENTS_CHANNEL]: {
      group: "webhooks",
      context: false,
      // An envelope holds up to a relay batch of facts, fanned out together (deliveriesRepo.fanOut batches them).
      maxInFlight: 4,
      async handler(payload: DomainEnvelope | DomainEvent) {
        const facts = factsOf(payload);
        let queued = 0;
        try {
          await handleFacts(facts, async (fact) => (queued += await deliveriesRepo.fanOut(fact)), {
            concurrency: facts.length,
          });
        } finally {
          if (queued > 0) this.dispatcher.wake();
        }
      },
    },
  },

  created() {
    const cfg = config();
    this.dispatcher = new Dispatcher({
      nodeId: this.broker.nodeID,
      logger: this.logger,
      retryDelaysMs: cfg.webhookRetryDelaysMs,
      timeoutMs: cfg.webhookTimeoutMs,
      leaseMs: cfg.webhookLeaseMs,
      metrics: this.broker.metrics,
      concurrency: cfg.webhookConcurrency,
      endpointConcurrency: cfg.webhookEndpointConcurrency,
      guard: guardEnabled,
    });
  },

  started() {
    this.dispatcher.start();
  },

  stopped() {
    return this.dispatcher.stop();
  },
});
