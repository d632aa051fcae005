import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { audit } from "../../lib/audit";
import { newId } from "../../lib/crypto";
import { defineAction, defineMixin } from "../../lib/define-service";
import { found, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { Params, Trimmed, WorkspaceIdParam } from "../../lib/schema";
import { workspaceOf } from "../../lib/tenancy";
import type { Channel } from "../../lib/channels";
import { openedConfig, storedConfig } from "./credentials";
import { PROVIDERS_CHANGED_EVENT } from "./for-send";
import type { ProviderType } from "./kinds";
import * as repo from "./providers.repo";
import { results, type ProviderHealth } from "./providers.schemas";

type Config = Record<string, unknown>;

/**
 * A provider type a workspace has one of (contract 4: web push's VAPID pair
 * at `providers/push`, pushgw1, pushgw2, chatapp1, chatapp2).
 */
export interface SingleProviderSpec {
  type: ProviderType;
  channel: Channel;
  /** The route segment: `{ws}/providers/<path>`. */
  path: string;
  /** Action names are `get<Name>`, `save<Name>`, `remove<Name>` (and `update<Name>` with `patch`). */
  name: string;
  /** What it is, for OpenAPI ("Web push (VAPID)"). */
  label: string;
  /** PATCH merges the config key by key (chatapp1). */
  patch?: boolean;
  /**
   * Before the config is stored: check it with the provider and add what is
   * generated (a webhook secret; the registered webhook). Opened config in
   * and out; a 400 naming the field when the provider refuses it.
   */
  prepare?(config: Config, providerId: string, ctx: AppContext, stored: Config | null): Promise<Config>;
  /** `prepare` asks the provider, so a POST may answer 502 UPSTREAM_ERROR (declared in OpenAPI). */
  asksProvider?: boolean;
  /** After removal: undo at the provider what `prepare` did (best effort; the row is gone either way). */
  removed?(config: Config, ctx: AppContext): Promise<void>;
  /** The GET's `health`: what the provider says of the connection (a webhook's state), opened config in. */
  describe?(config: Config, providerId: string, ctx: AppContext): Promise<ProviderHealth>;
}

const Config = Type.Record(Type.String(), Type.Unknown(), {
  description: "The type's settings (contract 4); a secret sent back masked keeps the stored one",
});
const saveParams = Params({
  workspaceId: WorkspaceIdParam,
  config: Config,
  name: Type.Optional(Trimmed({ minLength: 1, maxLength: 100 })),
});
const patchParams = Params({
  workspaceId: WorkspaceIdParam,
  config: Type.Optional(Config),
  name: Type.Optional(Trimmed({ minLength: 1, maxLength: 100 })),
});
const getParams = Params({ workspaceId: WorkspaceIdParam });

/**
 * Store `incoming` (the whole config, or merged over the stored one when
 * `merge`), creating the provider when absent (201, else 200): the save of
 * the type's POST and PATCH, and of what generates a config (`push/generate`).
 */
export async function saveSingleProvider(
  spec: SingleProviderSpec,
  ctx: AppContext,
  incoming: Config = {},
  merge: boolean,
  name?: string,
) {
  const ws = workspaceOf(ctx);
  const current = await repo.providerOfType(ws, spec.type);
  if (merge && !current) throw notFound("Provider");
  const id = current?.id ?? newId();
  const stored = current?.config ?? {};
  // PATCH merges over what is stored; POST replaces, a mask sent back naming the stored secret it keeps.
  const base = merge ? stored : Object.fromEntries(Object.keys(incoming).map((key) => [key, stored[key]]));
  // Checked (and a mask resolved) before the provider is asked; then stored with what preparing added.
  const checked = openedConfig(spec.type, storedConfig(spec.type, incoming, base));
  const prepared = spec.prepare
    ? await spec.prepare(checked, id, ctx, current ? openedConfig(spec.type, current.config) : null)
    : checked;
  const config = storedConfig(spec.type, prepared);
  const row = await repo.inChannel(ws, spec.channel, async (transaction) => {
    const existing = await repo.providerOfType(ws, spec.type, transaction);
    const write = {
      name: name ?? existing?.name ?? spec.type,
      // A chat channel's one provider is its default; push has one per type, chosen by the subscription's type.
      isDefault: spec.channel !== "push",
      priority: 0,
      config,
    };
    if (existing) await repo.updateProvider(transaction, ws, existing.id, write);
    else await repo.insertProvider(transaction, ws, { id, channel: spec.channel, type: spec.type, ...write });
    return found(await repo.providerOfType(ws, spec.type, transaction), "Provider");
  });
  await ctx.broker.broadcast(PROVIDERS_CHANGED_EVENT, { workspaceId: ws });
  await audit(
    ctx,
    current ? "provider.updated" : "provider.created",
    { type: "provider", id: row.id },
    {
      channel: spec.channel,
      type: spec.type,
    },
  );
  if (!current) ctx.meta.$statusCode = 201;
  return repo.view(row);
}

/**
 * The routes of a one-per-workspace provider type: GET (404 when none), POST
 * creating (201) or replacing (200) it, DELETE, and PATCH merging when the
 * type has it. Secrets are sealed and masked as for every provider; each
 * change tells the sending processes (PROVIDERS_CHANGED_EVENT).
 */
export function singleProviderActions(spec: SingleProviderSpec) {
  const route = `/workspaces/:workspaceId/providers/${spec.path}`;
  const access = requires("providers.manage");
  const tags = ["Providers"];

  const actions = {
    [`get${spec.name}`]: defineAction({
      rest: `GET ${route}`,
      openapi: { tags, summary: `${spec.label}: the workspace's provider` },
      ...access,
      params: getParams,
      result: results.provider,
      async handler(ctx) {
        const row = found(await repo.providerOfType(workspaceOf(ctx), spec.type), "Provider");
        if (!spec.describe) return repo.view(row);
        const health = await spec.describe(openedConfig(spec.type, row.config), row.id, ctx);
        return { ...repo.view(row), health };
      },
    }),

    [`save${spec.name}`]: defineAction({
      rest: `POST ${route}`,
      openapi: {
        tags,
        summary: `${spec.label}: set the provider (201 created, 200 replaced)`,
        ...(spec.asksProvider && { failures: [502] }),
      },
      ...access,
      params: saveParams,
      result: results.provider,
      alsoAnswers: { 201: results.provider },
      handler: (ctx) => saveSingleProvider(spec, ctx, ctx.params.config, false, ctx.params.name),
    }),

    [`remove${spec.name}`]: defineAction({
      rest: `DELETE ${route}`,
      openapi: { tags, summary: `${spec.label}: remove the provider` },
      ...access,
      params: getParams,
      result: results.success,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const removed = await repo.inChannel(ws, spec.channel, async (transaction) => {
          const existing = await repo.providerOfType(ws, spec.type, transaction);
          if (!existing) return null;
          await repo.deleteProvider(transaction, ws, existing.id, spec.channel);
          return existing;
        });
        if (!removed) throw notFound("Provider");
        await ctx.broker.broadcast(PROVIDERS_CHANGED_EVENT, { workspaceId: ws });
        await audit(ctx, "provider.deleted", { type: "provider", id: removed.id }, { channel: spec.channel });
        await spec.removed?.(openedConfig(spec.type, removed.config), ctx);
        return { success: true as const };
      },
    }),

    ...(spec.patch && {
      [`update${spec.name}`]: defineAction({
        rest: `PATCH ${route}`,
        openapi: {
          tags,
          summary: `${spec.label}: change the provider (config merges; a masked secret is kept)`,
        },
        ...access,
        params: patchParams,
        result: results.provider,
        handler: (ctx) => saveSingleProvider(spec, ctx, ctx.params.config, true, ctx.params.name),
      }),
    }),
  };
  return defineMixin({ actions });
}
