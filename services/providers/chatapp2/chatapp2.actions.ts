import { requires } from "../../../lib/access";
import { audit } from "../../../lib/audit";
import { defineAction, defineMixin } from "../../../lib/define-service";
import { forbidden, found, notFound } from "../../../lib/errors";
import type { AppContext } from "../../../lib/moleculer-types";
import { workspaceOf, type WorkspaceId } from "../../../lib/tenancy";
import type { ProviderEvent } from "../callbacks";
import { openedConfig } from "../credentials";
import * as repo from "../providers.repo";
import { singleProviderActions } from "../single.actions";
import { readAccount } from "./account";
import { handshakeAnswer } from "./callbacks";
import { chatapp2Results, chatapp2Schemas } from "./chatapp2.schemas";
import type { Chatapp2Config } from "./config";
import { fetchApproved } from "./account";
import { checkServiceWindow, checkTemplateContent, isTemplateContent } from "./templates";
import * as templatesRepo from "./templates.repo";
import * as windowRepo from "./window.repo";

/**
 * chatapp2 (WhatsApp Cloud API): the workspace's one provider (connecting
 * checks the token with `GET /{phoneNumberId}`), its approved templates,
 * the checks a send passes before it is queued, and what the webhook
 * routes (inbound.actions.ts) need of it: the GET handshake and the
 * customer service window each inbound message opens.
 */

const WS = "/workspaces/:workspaceId/providers/chatapp2";
const tags = ["Providers"];
const manage = requires("providers.manage");

/** The workspace's chatapp2 provider with its secrets opened (this process only); 404 when none. */
async function openedProvider(workspaceId: WorkspaceId) {
  const row = found(await repo.providerOfType(workspaceId, "chatapp2"), "Provider");
  return { id: row.id, config: openedConfig("chatapp2", row.config) as Chatapp2Config };
}

/** `{ws}/providers/chatapp2`: GET, POST (the token checked with the API first), DELETE. */
export const chatapp2Provider = singleProviderActions({
  type: "chatapp2",
  channel: "chatapp2",
  path: "chatapp2",
  name: "Chatapp2",
  label: "chatapp2 (WhatsApp Cloud API)",
  asksProvider: true,
  async prepare(config) {
    const typed = config as Chatapp2Config;
    await readAccount(typed, `/${typed.phoneNumberId}`, "phoneNumberId");
    return config;
  },
});

export const chatapp2Actions = defineMixin({
  actions: {
    /** The approved templates as last synced (bare array). providers.manage. */
    listChatapp2Templates: defineAction({
      rest: `GET ${WS}/templates`,
      openapi: { tags, summary: "chatapp2: the account's approved message templates, as last synced" },
      ...manage,
      params: chatapp2Schemas.templates,
      result: chatapp2Results.templates,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        found(await repo.providerOfType(ws, "chatapp2"), "Provider");
        return templatesRepo.listTemplates(ws);
      },
    }),

    /** Pull the account's approved templates (every page), replacing the kept set. providers.manage. */
    syncChatapp2Templates: defineAction({
      rest: `POST ${WS}/templates/sync`,
      openapi: {
        tags,
        summary: "chatapp2: sync the approved message templates from the provider",
        failures: [502],
      },
      ...manage,
      params: chatapp2Schemas.templates,
      result: chatapp2Results.synced,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const provider = await openedProvider(ws);
        const templates = await fetchApproved(provider.config);
        await templatesRepo.replaceTemplates(ws, provider.id, templates);
        await audit(
          ctx,
          "chatapp2_templates.synced",
          { type: "provider", id: provider.id },
          { synced: templates.length },
        );
        return { synced: templates.length };
      },
    }),

    /**
     * Internal (messages, before queueing a chatapp2 send): a template send
     * must name a synced template in its language with its parameter count
     * (400 naming the field); a free-form one to `to` must fall in the
     * 24-hour window (409 INVALID_STATE), transactional or not: it is the
     * provider's rule. Nothing to check without a chatapp2 provider.
     */
    chatapp2SendCheck: defineAction({
      params: chatapp2Schemas.sendCheck,
      result: chatapp2Results.sendCheck,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        if (!(await repo.providerOfType(ws, "chatapp2"))) return { checked: false };
        const { content, to } = ctx.params;
        if (isTemplateContent(content))
          checkTemplateContent(content, await templatesRepo.templatesNamed(ws, String(content.templateName)));
        else if (to) checkServiceWindow(await windowRepo.lastInbound(ws, to), new Date());
        return { checked: true };
      },
    }),
  },
});

/** `GET /api/providers/chatapp2/webhooks`: Meta's subscription handshake, the challenge back as text when the token matches. */
export async function handshake(
  ctx: AppContext<{
    providerId: string;
    "hub.mode"?: string;
    "hub.verify_token"?: string;
    "hub.challenge"?: string;
  }>,
): Promise<string> {
  const provider = await repo.providerForCallback(ctx.params.providerId);
  if (provider?.type !== "chatapp2") throw notFound("Provider");
  const challenge = handshakeAnswer(
    {
      mode: ctx.params["hub.mode"],
      verifyToken: ctx.params["hub.verify_token"],
      challenge: ctx.params["hub.challenge"],
    },
    provider.config.verifyToken,
  );
  if (challenge === null) throw forbidden("The verify token does not match the provider's");
  ctx.meta.$responseType = "text/plain; charset=utf-8";
  return challenge;
}

/**
 * An inbound chatapp2 message opens (or extends) its sender's 24-hour
 * window from when it was sent (a callback Meta retried late opens no
 * window it did not), never from a time ahead of ours.
 */
export async function openWindow(
  workspaceId: WorkspaceId,
  inbound: Extract<ProviderEvent, { kind: "inbound" }>,
): Promise<void> {
  const now = new Date();
  const at = inbound.sentAt && inbound.sentAt < now ? inbound.sentAt : now;
  await windowRepo.noteInbound(workspaceId, inbound.from, at);
}
