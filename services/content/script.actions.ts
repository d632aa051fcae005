import { LRUCache } from "lru-cache";
import type { ServiceBroker } from "moleculer";
import { config } from "../../lib/config";
import { sha256Hex } from "../../lib/crypto";
import { defineAction, defineMixin, type ServiceThis } from "../../lib/define-service";
import { fieldError, forbidden, unauthorized, validationError } from "../../lib/errors";
import { schemaIssues } from "../../lib/schema";
import type { AppContext } from "../../lib/moleculer-types";
import { consume } from "../../lib/rate-limit";
import { RefusedOrigins } from "../../lib/refused-origins";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { VersionedCache } from "../../lib/versioned-cache";
import { linkedContact } from "../messages/links";
import { PROVIDERS_CHANGED_EVENT } from "../providers/for-send";
import type { PushSubscriptionView } from "../push/push.schemas";
import { results, schemas, WebSubscription } from "./content.schemas";
import { slotsFor } from "./dynamic.actions";
import { EventStreams } from "./event-streams";
import * as focus from "./focus-items.repo";
import { scriptOriginAllowed, type ScriptSite } from "./script-origin";
import type { FocusItemView } from "./content.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The website script's endpoints (contract 10; mixed into `content`),
 * public: a workspace's `siteKey` (`?key=`) names it, a page's `Origin`
 * must be one of its `allowedOrigins` (echoed back for CORS), this
 * service's own or one of the workspace's landing pages (script-origin.ts),
 * and a visitor is known only by the `visitorToken` a form
 * submission gave it. `public/cms.js` is the script that calls them.
 */

const tags = ["Website script"];
/** Events a visitor may record; the service records the others itself (opens, submissions, opt-outs...). */
const RESERVED_TYPES = /^(message\.|form\.|unsubscribe\.|asset\.|campaign\.|contact\.)|\.message_received$/;
/** The script's focus item events, and the counter of the item each adds to. */
const FOCUS_COUNTERS = { "focus_item.view": "views", "focus_item.conversion": "conversions" } as const;
/** Events one address may record per minute. */
const EVENT_LIMIT = { name: "script-event", points: 300, durationSeconds: 60 };

/**
 * Sites by key, kept in the process a few seconds: every script request names
 * its site, and a round trip to a shared cache for each costs more than
 * serving the answer. A changed `allowedOrigins` or a rotated key applies
 * within SITE_TTL_MS; unknown keys are not kept.
 */
const SITE_TTL_MS = 5_000;
const sites = new LRUCache<string, Promise<ScriptSite>>({ max: 10_000, ttl: SITE_TTL_MS });

/**
 * Each workspace's VAPID public key, kept until its providers change
 * (PROVIDERS_CHANGED_EVENT) or VAPID_TTL_MS passes (a missed event's bound):
 * every page load asks for the script's configuration.
 */
const VAPID_TTL_MS = 30_000;
const vapidKeys = new LRUCache<string, Promise<string | null>>({ max: 10_000, ttl: VAPID_TTL_MS });

/** The key browsers subscribe with; null without a web push provider (or without the providers service). */
function vapidPublicKey(ctx: AppContext, workspaceId: WorkspaceId): Promise<string | null> {
  let key = vapidKeys.get(workspaceId);
  if (!key) {
    key = isServiceAvailable(ctx.broker, "providers")
      ? systemCall<{ publicKey: string | null }>(ctx, workspaceId, "providers.vapidPublicKey", {}).then(
          (answer) => answer.publicKey,
        )
      : Promise.resolve(null);
    vapidKeys.set(workspaceId, key);
    const kept = key;
    kept.catch(() => vapidKeys.peek(workspaceId) === kept && vapidKeys.delete(workspaceId));
  }
  return key;
}

/** The workspace of `?key=` (401 when unknown), its origins checked (a refusal noted) and echoed for CORS. */
async function siteOf(
  ctx: AppContext,
  { key, page }: { key?: string; page?: string },
  refused: RefusedOrigins,
): Promise<ScriptSite> {
  if (!key) throw unauthorized("The site key is missing (?key=)");
  let lookup = sites.get(key);
  if (!lookup) {
    lookup = systemCall<ScriptSite>(ctx, undefined, "workspaces.bySiteKey", { siteKey: key });
    sites.set(key, lookup);
    const kept = lookup;
    kept.catch(() => sites.peek(key) === kept && sites.delete(key));
  }
  const site = await lookup;
  const origin = ctx.meta.origin;
  if (origin) {
    if (!scriptOriginAllowed(origin, page, site)) {
      refused.note(site.workspaceId, origin);
      throw forbidden("This site is not among the workspace's allowedOrigins");
    }
    ctx.meta.$responseHeaders = {
      ...ctx.meta.$responseHeaders,
      "Access-Control-Allow-Origin": origin,
      Vary: "Origin",
    };
  }
  return site;
}

/** The browser's subscription, sent as an object (JSON) or as JSON text (form-encoded: no CORS preflight). */
function subscriptionOf(sent: WebSubscription | string): WebSubscription {
  if (typeof sent !== "string") return sent;
  let value: unknown;
  try {
    value = JSON.parse(sent);
  } catch {
    throw fieldError("subscription", "must be a PushSubscription as JSON");
  }
  const issues = schemaIssues(WebSubscription, value);
  if (issues.length)
    throw validationError(
      "Invalid subscription",
      issues.map((i) => ({
        field: i.field ? `subscription.${i.field}` : "subscription",
        message: i.message,
      })),
    );
  return value as WebSubscription;
}

/** The contact a visitor token names in this workspace (400 INVALID_TOKEN otherwise); none without a token. */
const visitorOf = (site: ScriptSite, token: string | undefined) =>
  linkedContact(token, ["visitor"], site.workspaceId);

/** A focus item as the script takes it (its segment rule applied by the service). */
const scriptItem = (i: FocusItemView) => ({
  id: i.id,
  name: i.name,
  type: i.type,
  content: i.content,
  formId: i.formId,
  trigger: i.trigger,
  rules: { urls: i.rules.urls, frequency: i.rules.frequency },
});

/** Which of the segments a visitor is a member of (none for an anonymous one). */
async function memberships(
  ctx: AppContext,
  workspaceId: WorkspaceId,
  contactId: string | null,
  segmentIds: string[],
) {
  if (!contactId || !segmentIds.length || !isServiceAvailable(ctx.broker, "segments"))
    return new Set<string>();
  const { segmentIds: member } = await systemCall<{ segmentIds: string[] }>(
    ctx,
    workspaceId,
    "segments.memberOf",
    {
      contactId,
      segmentIds,
    },
  );
  return new Set(member);
}

/** The focus item changed in a workspace (broadcast by focus.actions.ts): its streams get it, if it applies. */
export const FOCUS_ITEM_CHANGED = "content.focusItemChanged";

/** A workspace's script configuration at one version: its active focus items and forms, and the anonymous answer. */
interface SiteConfig {
  items: FocusItemView[];
  forms: Array<{ id: string; name: string; embedUrl: string }>;
  /** The segments items are limited to. */
  segmentIds: string[];
  anonymous: ConfigAnswer;
}

interface ConfigAnswer {
  body: {
    focusItems: ReturnType<typeof scriptItem>[];
    forms: SiteConfig["forms"];
    vapidPublicKey: string | null;
  };
  etag: string;
}

/** The answer with the workspace's VAPID public key in it (and in its ETag). */
function withVapidKey(answer: ConfigAnswer, key: string | null): ConfigAnswer {
  if (!key) return answer;
  return {
    body: { ...answer.body, vapidPublicKey: key },
    etag: `"${sha256Hex(`${answer.etag}${key}`).slice(0, 32)}"`,
  };
}

/** The configuration a visitor in `member` segments gets, with its ETag. */
function configAnswer(site: Omit<SiteConfig, "anonymous">, member: Set<string>): ConfigAnswer {
  const body = {
    focusItems: site.items.filter((i) => !i.rules.segmentId || member.has(i.rules.segmentId)).map(scriptItem),
    forms: site.forms,
    vapidPublicKey: null,
  };
  return { body, etag: `"${sha256Hex(JSON.stringify(body)).slice(0, 32)}"` };
}

async function loadSiteConfig(broker: ServiceBroker, workspaceId: WorkspaceId): Promise<SiteConfig> {
  const items = await focus.activeItems(workspaceId);
  const forms = isServiceAvailable(broker, "forms")
    ? await systemCall<
        Array<{
          id: string;
          name: string;
        }>
      >(broker, workspaceId, "forms.active", {})
    : [];
  const site = {
    items,
    forms: forms.map((f) => ({ ...f, embedUrl: `${config().publicUrl}/api/forms/${f.id}/embed` })),
    segmentIds: [...new Set(items.flatMap((i) => (i.rules.segmentId ? [i.rules.segmentId] : [])))],
  };
  return { ...site, anonymous: configAnswer(site, new Set()) };
}

/** What the website script's endpoints add to the content service's `this`. */
export interface ScriptState {
  /** The open event streams, by workspace. */
  streams: EventStreams;
  /** Requests from origins a workspace does not allow, noted in batches. */
  refusedOrigins: RefusedOrigins;
  /** Each workspace's script configuration, rebuilt when its focus items or forms change. */
  siteConfigs: VersionedCache<SiteConfig>;
}

type ScriptService = ServiceThis<ScriptState>;

export const scriptActions = defineMixin<ScriptService>({
  actions: {
    /**
     * What applies to the page: active focus items (those limited to a
     * segment only for a visitor in it), the active forms and the push key;
     * answered with an ETag (304 when unchanged). Public.
     */
    scriptConfig: defineAction({
      rest: "GET /script/config",
      auth: "public",
      openapi: {
        tags,
        summary: "The website script's configuration (ETag)",
        responses: {
          "200": {
            description: "What applies to the page, with its ETag",
            content: { "application/json": { schema: results.scriptConfig } },
          },
          "304": { description: "Unchanged since the ETag sent as `If-None-Match`" },
        },
      },
      params: schemas.scriptConfig,
      result: results.scriptConfig,
      async handler(this: ScriptService, ctx) {
        const site = await siteOf(ctx, ctx.params, this.refusedOrigins);
        const contactId = visitorOf(site, ctx.params.visitorToken);
        const cached = await this.siteConfigs.get(site.workspaceId);
        // Only an identified visitor can be in a segment: anyone else gets the answer made once per version.
        const answer = withVapidKey(
          contactId && cached.segmentIds.length
            ? configAnswer(cached, await memberships(ctx, site.workspaceId, contactId, cached.segmentIds))
            : cached.anonymous,
          await vapidPublicKey(ctx, site.workspaceId),
        );
        ctx.meta.$responseHeaders = {
          ...ctx.meta.$responseHeaders,
          ETag: answer.etag,
          "Cache-Control": "private, max-age=60",
        };
        if (ctx.meta.ifNoneMatch === answer.etag) {
          ctx.meta.$statusCode = 304;
          return null as unknown as typeof answer.body;
        }
        return answer.body;
      },
    }),

    /**
     * Record a page view or custom event of a visitor (form-encoded or JSON):
     * anonymous by its `sessionId`, or the contact's with a `visitorToken`,
     * whose session's earlier anonymous events then become the contact's. Public.
     */
    scriptEvent: defineAction({
      rest: "POST /script/event",
      auth: "public",
      openapi: { tags, summary: "Record a visitor's page view or custom event" },
      params: schemas.scriptEvent,
      result: results.scriptEvent,
      async handler(this: ScriptService, ctx) {
        const { key, page, visitorToken, metadata, type, ...fields } = ctx.params;
        const site = await siteOf(ctx, { key, page }, this.refusedOrigins);
        await consume(EVENT_LIMIT, ctx.meta.ip ?? "unknown");
        if (RESERVED_TYPES.test(type))
          throw forbidden(`${type} is recorded by the service itself, not by the website script`);
        const contactId = visitorOf(site, visitorToken);
        let meta: unknown = metadata ?? {};
        if (typeof meta === "string") {
          try {
            meta = JSON.parse(meta);
          } catch {
            meta = null;
          }
        }
        if (!meta || typeof meta !== "object" || Array.isArray(meta))
          throw fieldError("metadata", "must be a JSON object");
        if (contactId && fields.sessionId)
          await systemCall(ctx, site.workspaceId, "events.claimSession", {
            sessionId: fields.sessionId,
            contactId,
          });
        const event = await systemCall<{ id: string }>(ctx, site.workspaceId, "events.record", {
          type,
          contactId,
          metadata: meta,
          ...fields,
        });
        const counter = FOCUS_COUNTERS[type as keyof typeof FOCUS_COUNTERS];
        const focusItemId = (meta as { focusItemId?: unknown }).focusItemId;
        if (counter && typeof focusItemId === "string")
          await focus.countShown(site.workspaceId, focusItemId, counter);
        return { eventId: event.id };
      },
    }),

    /**
     * Server-sent events for the page: `ready`, each of `slots`' dynamic
     * content for the visitor (`dynamic_content {slot, html}`), focus items
     * as they are saved (`focus_item`), and `ping` every
     * `SCRIPT_HEARTBEAT_MS`; every stream ends when the service stops. Public.
     */
    scriptStream: defineAction({
      rest: "GET /script/stream",
      auth: "public",
      openapi: {
        tags,
        summary: "Server-sent events for the page (dynamic content, focus items)",
        responses: {
          "200": {
            description: "text/event-stream",
            content: { "text/event-stream": { schema: { type: "string" } } },
          },
          "4XX": { $ref: "#/components/responses/Error" },
        },
      },
      params: schemas.scriptStream,
      async handler(this: ScriptService, ctx) {
        const site = await siteOf(ctx, ctx.params, this.refusedOrigins);
        const contactId = visitorOf(site, ctx.params.visitorToken);
        const slots = [...new Set((ctx.params.slots ?? "").split(",").map((s) => s.trim()))].filter(Boolean);
        const content = slots.length
          ? await slotsFor(ctx, site.workspaceId, [contactId], slots.slice(0, 50))
          : {};
        ctx.meta.$responseType = "text/event-stream; charset=utf-8";
        ctx.meta.$responseHeaders = {
          ...ctx.meta.$responseHeaders,
          "Cache-Control": "no-cache",
          "X-Accel-Buffering": "no",
        };
        const visitor = this.streams.add(site.workspaceId, contactId);
        for (const [slot, html] of Object.entries(content[contactId ?? ""] ?? {}))
          visitor.send("dynamic_content", { slot, html });
        return visitor.stream;
      },
    }),

    /**
     * Store a browser's push subscription (201), the identified visitor's
     * contact's when a `visitorToken` comes with it; a known endpoint is
     * updated (200). A renewal names the subscription it replaces
     * (`previousEndpoint`, `previousAuth`) and takes over its contact. Its
     * keys are sealed and never answered. Public.
     */
    scriptPush: defineAction({
      rest: "POST /script/push",
      auth: "public",
      openapi: { tags, summary: "Store a browser's push subscription" },
      params: schemas.scriptPush,
      status: 201,
      alsoAnswers: { 200: results.pushSubscription },
      result: results.pushSubscription,
      async handler(this: ScriptService, ctx) {
        const site = await siteOf(ctx, ctx.params, this.refusedOrigins);
        await consume(EVENT_LIMIT, ctx.meta.ip ?? "unknown");
        const contactId = visitorOf(site, ctx.params.visitorToken);
        const { endpoint, keys } = subscriptionOf(ctx.params.subscription);
        const { previousEndpoint, previousAuth } = ctx.params;
        if (!previousEndpoint !== !previousAuth)
          throw fieldError(
            previousEndpoint ? "previousAuth" : "previousEndpoint",
            "comes with the other or not at all",
          );
        const { subscription, created } = await systemCall<{
          subscription: PushSubscriptionView;
          created: boolean;
        }>(ctx, site.workspaceId, "push.saveWeb", {
          contactId,
          endpoint,
          keys,
          ...(previousEndpoint ? { previous: { endpoint: previousEndpoint, auth: previousAuth } } : {}),
        });
        if (!created) ctx.meta.$statusCode = 200;
        return subscription;
      },
    }),

    /** The fields of a form an identified visitor's contact already fills (none for an anonymous one). Public. */
    scriptPrefill: defineAction({
      rest: "GET /script/prefill",
      auth: "public",
      openapi: { tags, summary: "Known fields of a form for an identified visitor" },
      params: schemas.scriptPrefill,
      result: results.scriptPrefill,
      async handler(this: ScriptService, ctx) {
        const site = await siteOf(ctx, ctx.params, this.refusedOrigins);
        const contactId = visitorOf(site, ctx.params.visitorToken);
        if (!contactId) return { fields: {} };
        ctx.meta.$responseHeaders = { ...ctx.meta.$responseHeaders, "Cache-Control": "no-store" };
        return systemCall<{
          fields: Record<string, unknown>;
        }>(ctx, site.workspaceId, "forms.prefill", {
          formId: ctx.params.formId,
          contactId,
        });
      },
    }),
  },

  events: {
    /** A workspace's providers changed: its VAPID public key is read again at the next page load. */
    [PROVIDERS_CHANGED_EVENT](ctx: AppContext<{ workspaceId: WorkspaceId }>) {
      vapidKeys.delete(ctx.params.workspaceId);
    },

    /** A saved focus item reaches this process's open streams of its workspace, where it applies. */
    async [FOCUS_ITEM_CHANGED](ctx: AppContext<{ workspaceId: WorkspaceId; focusItemId: string }>) {
      const { workspaceId, focusItemId } = ctx.params;
      const streams = this.streams.of(workspaceId);
      if (!streams.length) return;
      const item = await focus.findItem(workspaceId, focusItemId);
      if (!item?.active) return;
      for (const visitor of streams) {
        const segment = item.rules.segmentId;
        if (segment && !(await memberships(ctx, workspaceId, visitor.contactId, [segment])).has(segment))
          continue;
        visitor.send("focus_item", scriptItem(item));
      }
    },
  },

  created() {
    this.streams = new EventStreams(config().scriptHeartbeatMs);
    this.refusedOrigins = new RefusedOrigins(this.broker);
    // Read on every page load: rebuilt only when the workspace's focus items or forms change (one probe per batch of reads).
    this.siteConfigs = new VersionedCache<SiteConfig>(
      focus.scriptConfigVersions,
      (workspaceId) => loadSiteConfig(this.broker, workspaceId),
      { maxEntries: 10_000 },
    );
  },

  stopped() {
    this.streams.closeAll();
    return this.refusedOrigins.flush();
  },
});
