import { config as appConfig } from "../../../lib/config";
import { randomBase62 } from "../../../lib/crypto";
import { fieldError, upstreamError } from "../../../lib/errors";
import type { AppContext } from "../../../lib/moleculer-types";
import { looksMasked } from "../../../lib/secret-box";
import { systemCall } from "../../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../../lib/tenancy";
import { DEFAULT_COMMANDS, type ChannelCommand } from "../commands";
import type { ProviderHealth } from "../providers.schemas";
import * as repo from "../providers.repo";
import { openedConfig } from "../credentials";
import {
  deleteWebhook,
  getMe,
  getWebhookInfo,
  setMyCommands,
  setWebhook,
  type Bot,
  type BotAnswer,
  type BotCommand,
} from "./bot";

/**
 * Connecting a Telegram bot (contract 4): the token checked with `getMe`,
 * the webhook registered with a generated secret (the token never in its
 * URL), the command menu set from the workspace's channel commands, and the
 * workspace's bot URL filled so `chatapp1-link` works at once. Its GET
 * shows the webhook's health and registers the webhook again when Telegram
 * has lost it.
 */

type Config = Record<string, unknown>;

export const WEBHOOK_PATH = "/api/providers/chatapp1/webhooks";

/** Where Telegram posts the bot's updates: the provider names the workspace, the secret header proves Telegram. */
export const webhookUrl = (providerId: string) =>
  `${appConfig().publicUrl}${WEBHOOK_PATH}?providerId=${encodeURIComponent(providerId)}`;

const botOf = (config: Config): Bot => ({
  token: String(config.botToken),
  baseUrl: typeof config.baseUrl === "string" ? config.baseUrl : undefined,
});

/** What each command does, as the bot's menu says it. */
const DESCRIPTIONS: Record<ChannelCommand["action"], string> = {
  opt_out: "Stop receiving our messages",
  opt_in: "Receive our messages again",
  help: "How this works",
};

/**
 * Pure: Telegram's command menu from the workspace's commands on chatapp1.
 * Telegram takes 1-32 lower-case letters, digits and underscores; a keyword
 * that cannot be one (it has a space) still works typed, it is only left off
 * the menu. `start` is Telegram's own conversation opener and stays so.
 */
export function menuOf(commands: ChannelCommand[]): BotCommand[] {
  const menu = new Map<string, BotCommand>();
  for (const c of commands) {
    const command = c.keyword.trim().toLowerCase();
    if (!c.channels.includes("chatapp1") || !/^[a-z0-9_]{1,32}$/.test(command) || command === "start")
      continue;
    if (!menu.has(command)) menu.set(command, { command, description: DESCRIPTIONS[c.action] });
  }
  return [...menu.values()].slice(0, 100);
}

/** A Bot API call whose network failure is a 502 naming Telegram, not a 500. */
async function ask<T>(what: string, call: Promise<BotAnswer<T>>): Promise<BotAnswer<T>> {
  try {
    return await call;
  } catch (err) {
    throw upstreamError(`The Telegram Bot API could not be reached (${what}): ${(err as Error).message}`);
  }
}

function refused(what: string, answer: BotAnswer<unknown>): never {
  throw upstreamError(`Telegram refused ${what}: ${answer.description}`);
}

async function registerWebhook(bot: Bot, providerId: string, secret: string): Promise<void> {
  const answer = await ask("setWebhook", setWebhook(bot, webhookUrl(providerId), secret));
  if (!answer.ok) refused("the webhook", answer);
}

/** The workspace's commands for the bot's menu; Telegram's refusal is the caller's to judge. */
async function setMenu(bot: Bot, workspaceId: WorkspaceId) {
  const commands = (await repo.getCommands(workspaceId)) ?? DEFAULT_COMMANDS;
  return ask("setMyCommands", setMyCommands(bot, menuOf(commands)));
}

/**
 * `prepare` of the chatapp1 provider: check the token, keep the webhook
 * secret while the token stays (else generate one), register the webhook
 * and the menu, and fill the workspace's bot URL when unset. A refused token
 * is a 400 on `config.botToken`; Telegram out of reach a 502.
 */
export async function prepareChatapp1(
  config: Config,
  providerId: string,
  ctx: AppContext,
  stored: Config | null,
): Promise<Config> {
  const sent = (ctx.params as { config?: Config }).config?.webhookSecret;
  if (typeof sent === "string" && !looksMasked(sent))
    throw fieldError("config.webhookSecret", "is generated when the bot is connected: leave it out");
  const bot = botOf(config);
  const me = await ask("getMe", getMe(bot));
  if (me.status === 401 || me.status === 404)
    throw fieldError("config.botToken", `was refused by Telegram: ${me.description}`);
  if (!me.ok || !me.result?.username) refused("getMe", me);
  const sameBot = stored?.botToken === bot.token && typeof stored.webhookSecret === "string";
  const webhookSecret = sameBot ? (stored.webhookSecret as string) : randomBase62(48);
  await registerWebhook(bot, providerId, webhookSecret);
  const menu = await setMenu(bot, workspaceOf(ctx));
  if (!menu.ok) refused("the command menu", menu);
  // Another bot was connected before: it stops posting to us.
  if (stored && !sameBot && typeof stored.botToken === "string")
    await deleteWebhook(botOf(stored)).catch(() => undefined);
  await fillBotUrl(ctx, `https://t.me/${me.result.username}`);
  return { ...config, botUsername: me.result.username, webhookSecret };
}

/** `settings.chatapp1.botUrl`, through the workspaces area, when the workspace has none. */
async function fillBotUrl(ctx: AppContext, botUrl: string): Promise<void> {
  const workspaceId = workspaceOf(ctx);
  const workspace = await systemCall<{ settings?: { chatapp1?: { botUrl?: unknown } | null } }>(
    ctx,
    workspaceId,
    "workspaces.get",
    { workspaceId },
  );
  if (!workspace.settings?.chatapp1?.botUrl)
    await systemCall(ctx, workspaceId, "workspaces.update", {
      workspaceId,
      settings: { chatapp1: { botUrl } },
    });
}

/** `removed`: Telegram stops posting to us (best effort: the provider is gone either way). */
export async function removedChatapp1(config: Config, ctx: AppContext): Promise<void> {
  const answer = await deleteWebhook(botOf(config)).catch((err: Error) => ({
    ok: false,
    description: err.message,
  }));
  if (!answer.ok) ctx.broker.logger.warn(`chatapp1: deleteWebhook failed: ${answer.description}`);
}

/**
 * The webhook's health for the provider's GET (`getWebhookInfo`): whether it
 * points at us, Telegram's last delivery error and the updates waiting. A
 * webhook that was lost (no URL, or another one) is registered again.
 */
export async function describeChatapp1(config: Config, providerId: string): Promise<ProviderHealth> {
  const checkedAt = new Date();
  const bot = botOf(config);
  const unknown = (reachable: boolean, error: string): ProviderHealth => ({
    reachable,
    webhookRegistered: false,
    reRegistered: false,
    pendingUpdates: null,
    lastError: error,
    lastErrorAt: null,
    checkedAt,
  });
  const info = await getWebhookInfo(bot).catch((err: Error) => err);
  if (info instanceof Error) return unknown(false, info.message);
  if (!info.ok || !info.result) return unknown(true, `Telegram refused getWebhookInfo: ${info.description}`);
  const lost = info.result.url !== webhookUrl(providerId);
  if (lost) {
    const again = await setWebhook(bot, webhookUrl(providerId), String(config.webhookSecret)).catch(
      (err: Error) => err,
    );
    if (again instanceof Error) return unknown(false, again.message);
    if (!again.ok) return unknown(true, `Telegram refused the webhook: ${again.description}`);
  }
  return {
    reachable: true,
    webhookRegistered: true,
    reRegistered: lost,
    pendingUpdates: info.result.pending_update_count ?? null,
    lastError: info.result.last_error_message ?? null,
    lastErrorAt: info.result.last_error_date ? new Date(info.result.last_error_date * 1000) : null,
    checkedAt,
  };
}

/** Channel commands replaced: the bot's menu follows (a failure is logged; the commands themselves are saved). */
export async function commandsChanged(ctx: AppContext, workspaceId: WorkspaceId): Promise<void> {
  const provider = await repo.providerOfType(workspaceId, "chatapp1");
  if (!provider) return;
  const answer = await setMenu(botOf(openedConfig("chatapp1", provider.config)), workspaceId).catch(
    (err: Error) => ({ ok: false, description: err.message }),
  );
  if (!answer.ok)
    ctx.broker.logger.warn(`chatapp1: the bot's command menu was not updated: ${answer.description}`);
}
