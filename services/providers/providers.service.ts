import { requires } from "../../lib/access";
import { Type, type Static } from "@sinclair/typebox";
import { audit } from "../../lib/audit";
import { config } from "../../lib/config";
import { newId } from "../../lib/crypto";
import { defineAction, defineService, type ServiceThis } from "../../lib/define-service";
import { fieldError, found, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import type { ProviderChannel } from "../../lib/channels";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { storedConfig } from "./credentials";
import { PROVIDERS_CHANGED_EVENT } from "./for-send";
import { describeChatapp1, prepareChatapp1, removedChatapp1 } from "./chatapp1/connect";
import { checkDomain } from "./domain-check";
import { chatapp2Actions, chatapp2Provider } from "./chatapp2/chatapp2.actions";
import { inboundActions } from "./inbound.actions";
import { checkPushgw1 } from "./pushgw1/config";
import { checkPushgw2 } from "./pushgw2/config";
import { singleProviderActions } from "./single.actions";
import { VAPID_PROVIDER, vapidActions } from "./vapid/vapid.actions";
import * as repo from "./providers.repo";
import type { ProviderType } from "./kinds";
import { results, schemas, type ProviderView } from "./providers.schemas";

const WS = "/workspaces/:workspaceId/providers";
const tags = ["Providers"];
const manage = requires("providers.manage");
/** How long an applied callback event id is remembered. */
const EVENT_ID_DAYS = 30;

type CreateParams = Static<typeof schemas.createEmail>;
type UpdateParams = Static<typeof schemas.update>;

/** The providers service's `this`: one implementation of each action for both channels. */
type ProvidersService = ServiceThis<{
  changed(workspaceId: WorkspaceId): Promise<void>;
  create(ctx: AppContext<CreateParams>, channel: ProviderChannel): Promise<ProviderView>;
  getOne(ctx: AppContext<{ providerId: string }>, channel: ProviderChannel): Promise<ProviderView>;
  update(ctx: AppContext<UpdateParams>, channel: ProviderChannel): Promise<ProviderView>;
  remove(ctx: AppContext<{ providerId: string }>, channel: ProviderChannel): Promise<{ success: true }>;
}>;

/**
 * Email and SMS providers per workspace (contract 4): the first of a channel
 * is its default, `isDefault: true` moves the default, and the rest follow
 * in `priority` order when the sender fails over. Credentials are sealed at
 * rest and masked in every answer; no action answers them opened: the
 * sending process opens its own through `providersForSend` (for-send.ts),
 * told of each change by PROVIDERS_CHANGED_EVENT.
 */
export default defineService<ProvidersService>({
  name: "providers",
  mixins: [
    DatabaseMixin,
    inboundActions,
    BackgroundMixin,
    singleProviderActions(VAPID_PROVIDER),
    vapidActions,
    singleProviderActions({
      type: "pushgw1",
      channel: "push",
      path: "pushgw1",
      name: "Pushgw1",
      label: "Push gateway 1 (FCM HTTP v1)",
      prepare: checkPushgw1,
    }),
    singleProviderActions({
      type: "pushgw2",
      channel: "push",
      path: "pushgw2",
      name: "Pushgw2",
      label: "Push gateway 2 (APNs)",
      prepare: checkPushgw2,
    }),
    singleProviderActions({
      type: "chatapp1",
      channel: "chatapp1",
      path: "chatapp1",
      name: "Chatapp1",
      label: "chatapp1 (Telegram Bot API)",
      patch: true,
      asksProvider: true,
      prepare: prepareChatapp1,
      removed: removedChatapp1,
      describe: describeChatapp1,
    }),
    chatapp2Provider,
    chatapp2Actions,
  ],
  settings: { rest: "/" },

  actions: {
    /** The email providers, the default first. providers.manage. */
    listEmail: defineAction({
      rest: `GET ${WS}/email`,
      openapi: { tags, summary: "List email providers" },
      ...manage,
      params: schemas.list,
      result: results.list,
      handler: async (ctx) => (await repo.listProviders(workspaceOf(ctx), "email")).map(repo.view),
    }),

    /** Add an email provider (smtp, emailapi1, emailapi2); the first is the default. providers.manage. */
    createEmail: defineAction({
      rest: `POST ${WS}/email`,
      openapi: { tags, summary: "Add an email provider" },
      ...manage,
      params: schemas.createEmail,
      status: 201,
      result: results.provider,
      handler(this: ProvidersService, ctx) {
        return this.create(ctx, "email");
      },
    }),

    getEmail: defineAction({
      rest: `GET ${WS}/email/:providerId`,
      openapi: { tags, summary: "Get an email provider" },
      ...manage,
      params: schemas.get,
      result: results.provider,
      handler(this: ProvidersService, ctx) {
        return this.getOne(ctx, "email");
      },
    }),

    /** Change a provider; `config` merges key by key and a secret sent back masked is kept. providers.manage. */
    updateEmail: defineAction({
      rest: `PATCH ${WS}/email/:providerId`,
      openapi: { tags, summary: "Update an email provider (config merges; a masked secret is kept)" },
      ...manage,
      params: schemas.update,
      result: results.provider,
      handler(this: ProvidersService, ctx) {
        return this.update(ctx, "email");
      },
    }),

    /** Remove a provider; when it was the default, the next in priority becomes it. providers.manage. */
    removeEmail: defineAction({
      rest: `DELETE ${WS}/email/:providerId`,
      openapi: { tags, summary: "Remove an email provider" },
      ...manage,
      params: schemas.get,
      result: results.success,
      handler(this: ProvidersService, ctx) {
        return this.remove(ctx, "email");
      },
    }),

    /**
     * Internal (the sender): a batch's outcome at a provider. Past
     * PROVIDER_FAILOVER_THRESHOLD transient failures in a row it is
     * `failing` and sends go to the next provider; an accepted send (a
     * probe) makes it `active` again. Each switch is logged and audited.
     */
    reportHealth: defineAction({
      params: schemas.reportHealth,
      result: results.reportHealth,
      async handler(this: ProvidersService, ctx) {
        const { providerId, accepted, transientFailures } = ctx.params;
        const change = await repo.reportHealth(
          workspaceOf(ctx),
          providerId,
          { accepted, transientFailures },
          config().providerFailoverThreshold,
          config().providerProbeIntervalMs,
        );
        if (!change) throw notFound("Provider");
        const { row, was } = change;
        if (row.status !== was) {
          const failing = row.status === "failing";
          this.logger[failing ? "warn" : "info"](
            `Provider ${row.id} (${row.type}, ${row.channel}) of workspace ${row.workspace_id} is ${row.status}` +
              (failing
                ? ` after ${row.consecutive_failures} transient failures: sends go to the next provider`
                : ": a probe went through"),
          );
          await audit(
            ctx,
            failing ? "provider.failing" : "provider.recovered",
            { type: "provider", id: row.id },
            {
              channel: row.channel,
              type: row.type,
              consecutiveFailures: row.consecutive_failures,
            },
          );
          await this.changed(row.workspace_id);
        }
        return { status: row.status };
      },
    }),

    /** Internal (timer, cron tick): forget applied event ids after a month; no provider retries that long. */
    sweepEventLog: defineAction({
      result: Type.Integer(),
      handler: () => repo.dropOldEventIds(EVENT_ID_DAYS),
    }),

    /** SPF, DKIM (`<dkimSelector|default>._domainkey`) and DMARC of the sending domain, and what is wrong. providers.manage. */
    domainCheck: defineAction({
      rest: `POST ${WS}/email/:providerId/domain-check`,
      openapi: { tags, summary: "Check the sending domain's SPF, DKIM and DMARC records" },
      ...manage,
      params: schemas.domainCheck,
      result: results.domainCheck,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const provider = await repo.getProvider(ws, ctx.params.providerId);
        if (!provider || provider.channel !== "email") throw notFound("Provider");
        let domain = ctx.params.domain;
        if (!domain) {
          const workspace = (await ctx.call("workspaces.get", { workspaceId: ws })) as {
            settings?: { sender?: { fromEmail?: string | null } | null };
          };
          domain = workspace.settings?.sender?.fromEmail?.split("@")[1];
          if (!domain) throw fieldError("domain", "is required: settings.sender.fromEmail names no domain");
        }
        return checkDomain(domain.toLowerCase(), ctx.params.dkimSelector ?? "default");
      },
    }),

    listSms: defineAction({
      rest: `GET ${WS}/sms`,
      openapi: { tags, summary: "List SMS providers" },
      ...manage,
      params: schemas.list,
      result: results.list,
      handler: async (ctx) => (await repo.listProviders(workspaceOf(ctx), "sms")).map(repo.view),
    }),

    createSms: defineAction({
      rest: `POST ${WS}/sms`,
      openapi: { tags, summary: "Add an SMS provider" },
      ...manage,
      params: schemas.createSms,
      status: 201,
      result: results.provider,
      handler(this: ProvidersService, ctx) {
        return this.create(ctx, "sms");
      },
    }),

    getSms: defineAction({
      rest: `GET ${WS}/sms/:providerId`,
      openapi: { tags, summary: "Get an SMS provider" },
      ...manage,
      params: schemas.get,
      result: results.provider,
      handler(this: ProvidersService, ctx) {
        return this.getOne(ctx, "sms");
      },
    }),

    updateSms: defineAction({
      rest: `PATCH ${WS}/sms/:providerId`,
      openapi: { tags, summary: "Update an SMS provider (config merges; a masked secret is kept)" },
      ...manage,
      params: schemas.update,
      result: results.provider,
      handler(this: ProvidersService, ctx) {
        return this.update(ctx, "sms");
      },
    }),

    removeSms: defineAction({
      rest: `DELETE ${WS}/sms/:providerId`,
      openapi: { tags, summary: "Remove an SMS provider" },
      ...manage,
      params: schemas.get,
      result: results.success,
      handler(this: ProvidersService, ctx) {
        return this.remove(ctx, "sms");
      },
    }),

    /** Internal (a send naming its provider): whether it is one of the channel's (404 naming `providerId`); no secret opened. */
    known: defineAction({
      params: schemas.known,
      result: results.known,
      async handler(ctx) {
        const { channel, providerId } = ctx.params;
        const provider = await repo.getProvider(workspaceOf(ctx), providerId);
        if (provider?.channel !== channel)
          throw notFound("Provider", {
            field: "providerId",
            message: `no ${channel} provider ${providerId}`,
          });
        return { known: true as const };
      },
    }),

    /** Internal (the preference centre): the channels the workspace has a provider for; no secret opened. */
    configuredChannels: defineAction({
      params: schemas.configuredChannels,
      result: results.configuredChannels,
      handler(ctx) {
        return repo.configuredChannels(workspaceOf(ctx));
      },
    }),
  },

  methods: {
    /** Every sending process drops its copies of the workspace's providers. */
    changed(workspaceId: WorkspaceId) {
      return this.broker.broadcast(PROVIDERS_CHANGED_EVENT, { workspaceId });
    },

    async create(ctx: AppContext<CreateParams>, channel: ProviderChannel) {
      const ws = workspaceOf(ctx);
      const { type, name, isDefault, priority, config } = ctx.params;
      const id = newId();
      const stored = storedConfig(type as ProviderType, config);
      const row = await repo.inChannel(ws, channel, async (transaction) => {
        const makeDefault = isDefault === true || !(await repo.hasDefault(transaction, ws, channel));
        if (makeDefault) await repo.clearDefault(transaction, ws, channel);
        await repo.insertProvider(transaction, ws, {
          id,
          channel,
          type: type as ProviderType,
          name: name ?? type,
          isDefault: makeDefault,
          priority: priority ?? 0,
          config: stored,
        });
        return found(await repo.getProvider(ws, id, transaction), "Provider");
      });
      await this.changed(ws);
      await audit(
        ctx,
        "provider.created",
        { type: "provider", id },
        { channel, type, isDefault: row.is_default },
      );
      return repo.view(row);
    },

    async getOne(ctx: AppContext<{ providerId: string }>, channel: ProviderChannel) {
      const row = await repo.getProvider(workspaceOf(ctx), ctx.params.providerId);
      if (!row || row.channel !== channel) throw notFound("Provider");
      return repo.view(row);
    },

    async update(ctx: AppContext<UpdateParams>, channel: ProviderChannel) {
      const ws = workspaceOf(ctx);
      const { providerId, name, isDefault, priority, config } = ctx.params;
      const row = await repo.inChannel(ws, channel, async (transaction) => {
        const current = await repo.getProvider(ws, providerId, transaction);
        if (!current || current.channel !== channel) throw notFound("Provider");
        // Only a move of the default is a change; `false` on the default would leave the channel without one.
        if (isDefault === true && !current.is_default) await repo.clearDefault(transaction, ws, channel);
        await repo.updateProvider(transaction, ws, providerId, {
          name: name ?? current.name,
          isDefault: current.is_default || isDefault === true,
          priority: priority ?? current.priority,
          config: config ? storedConfig(current.type, config, current.config) : current.config,
        });
        return found(await repo.getProvider(ws, providerId, transaction), "Provider");
      });
      await this.changed(ws);
      await audit(
        ctx,
        "provider.updated",
        { type: "provider", id: providerId },
        {
          channel,
          fields: Object.keys(ctx.params).filter((k) => k !== "workspaceId" && k !== "providerId"),
        },
      );
      return repo.view(row);
    },

    async remove(ctx: AppContext<{ providerId: string }>, channel: ProviderChannel) {
      const ws = workspaceOf(ctx);
      const { providerId } = ctx.params;
      const deleted = await repo.inChannel(ws, channel, async (transaction) => {
        const current = await repo.getProvider(ws, providerId, transaction);
        if (!current || current.channel !== channel) return false;
        return repo.deleteProvider(transaction, ws, providerId, channel);
      });
      if (!deleted) throw notFound("Provider");
      await this.changed(ws);
      await audit(ctx, "provider.deleted", { type: "provider", id: providerId }, { channel });
      return { success: true as const };
    },
  },
});
