import { Type } from "@sinclair/typebox";
import { defineAction } from "../../lib/define-service";
import type { AppContext } from "../../lib/moleculer-types";
import { prefersHtml, renderPage } from "../../lib/pages";
import { isServiceAvailable } from "../../lib/registry";
import { Nullable, Params, StringEnum } from "../../lib/schema";
import { type Channel, CHANNELS } from "../../lib/channels";
import { systemCall } from "../../lib/system-call";
import { preferencesUrl, signLinkToken, verifyLinkToken, type LinkClaims, type LinkType } from "./links";

/**
 * The contact's own pages (contract 6): unsubscribe (a confirm page, then
 * the opt-out), the preference centre (HTML for a browser, JSON otherwise)
 * and the double opt-in confirmation. Each is authorised by its signed token.
 */

const tags = ["Preferences"];
const ERROR = { $ref: "#/components/responses/Error" };
const Token = Type.String({ minLength: 1, maxLength: 4096, description: "The signed link token" });
const ConsentStatus = StringEnum(["opted_in", "opted_out", "unknown"]);
/** What a contact reads for each channel (chatapp1 and chatapp2 speak the Telegram and WhatsApp wires, contract 4). */
const CHANNEL_NAMES: Record<Channel, string> = {
  email: "Email",
  sms: "Text messages (SMS)",
  push: "Push notifications",
  chatapp1: "Telegram",
  chatapp2: "WhatsApp",
};

const PreferencesSchema = Type.Object({
  contact: Type.Object({ email: Nullable(Type.String()), firstName: Nullable(Type.String()) }),
  channels: Type.Record(Type.String(), ConsentStatus),
  topics: Type.Array(Type.Object({ key: Type.String(), name: Type.String(), subscribed: Type.Boolean() })),
});
const html = (description: string) => ({
  description,
  content: { "text/html": { schema: { type: "string" } } },
});
/** A bad or expired token (contract 6): the error as JSON, or a page when the client prefers HTML. */
const badLink = {
  description: "The link is invalid or expired (INVALID_TOKEN): a page when the client prefers HTML",
  content: {
    "application/json": { schema: { $ref: "#/components/responses/Error/content/application~1json/schema" } },
    "text/html": { schema: { type: "string" } },
  },
};

interface Contact {
  id: string;
  email: string | null;
  phone: string | null;
  firstName: string | null;
  consent: Record<string, { status: string }>;
  attributes: Record<string, unknown>;
}
interface Workspace {
  name: string;
  settings?: { topics?: Array<{ key: string; name: string }>; confirmRedirectUrl?: string };
}

/**
 * The channels the preference centre offers: those the workspace can send
 * on. Email always (with no provider the log provider sends, contract 4);
 * the others only once the workspace has a provider for them.
 */
async function sendableChannels(ctx: AppContext, claims: LinkClaims): Promise<Channel[]> {
  const configured = isServiceAvailable(ctx.broker, "providers")
    ? await systemCall<string[]>(ctx, claims.ws, "providers.configuredChannels", {})
    : [];
  return CHANNELS.filter((c) => c === "email" || configured.includes(c));
}

async function load(
  ctx: AppContext,
  claims: LinkClaims,
): Promise<{ contact: Contact; workspace: Workspace; channels: Channel[] }> {
  const [contact, workspace, channels] = await Promise.all([
    systemCall<Contact>(ctx, claims.ws, "contacts.get", {
      workspaceId: claims.ws,
      contactId: claims.sub,
    }),
    systemCall<Workspace>(ctx, claims.ws, "workspaces.get", { workspaceId: claims.ws }),
    sendableChannels(ctx, claims),
  ]);
  return { contact, workspace, channels };
}

function preferencesOf(contact: Contact, workspace: Workspace, channels: Channel[]) {
  const topics = (contact.attributes?.topics ?? {}) as Record<string, boolean>;
  return {
    contact: { email: contact.email, firstName: contact.firstName },
    channels: Object.fromEntries(
      channels.map((c) => [
        c,
        (contact.consent?.[c]?.status ?? "unknown") as "opted_in" | "opted_out" | "unknown",
      ]),
    ),
    topics: (workspace.settings?.topics ?? []).map((t) => ({
      key: t.key,
      name: t.name,
      subscribed: topics[t.key] !== false,
    })),
  };
}

/** Verify the token; a browser gets the bad-link page (400) instead of JSON. */
async function claimsOr(
  ctx: AppContext,
  token: string | undefined,
  types: LinkType[],
): Promise<LinkClaims | string> {
  try {
    return verifyLinkToken(token, types);
  } catch (err) {
    if (!prefersHtml(ctx.meta.accept)) throw err;
    return renderPage(
      ctx,
      "message",
      {
        title: "Link expired",
        heading: "This link no longer works",
        text: "It is invalid or has expired. Use the link in a more recent message.",
      },
      400,
    );
  }
}

/** The preference centre's page (HTML): a box ticked only for a consent given, never for an unknown one. */
async function preferencesPage(
  ctx: AppContext,
  token: string,
  contact: Contact,
  workspace: Workspace,
  channels: Channel[],
) {
  const prefs = preferencesOf(contact, workspace, channels);
  return renderPage(ctx, "preferences", {
    title: "Your preferences",
    token,
    address: contact.email ?? contact.phone ?? "you",
    workspaceName: workspace.name,
    channels: channels.map((c) => ({
      key: c,
      name: CHANNEL_NAMES[c],
      subscribed: prefs.channels[c] === "opted_in",
    })),
    topics: prefs.topics,
  });
}

/** The messages service's public preference pages (mixed into `messages`). */
export const preferenceActions = {
  actions: {
    /** The unsubscribe confirm page: names the channel, changes nothing. Public; the token authorises. */
    unsubscribePage: defineAction({
      rest: "GET /unsubscribe",
      auth: "public",
      openapi: {
        tags,
        summary: "Unsubscribe confirm page (HTML; changes nothing)",
        responses: { "200": html("The confirm page"), "400": badLink, "4XX": ERROR },
      },
      params: Params({ token: Type.Optional(Token) }),
      async handler(ctx) {
        const claims = await claimsOr(ctx, ctx.params.token, ["unsubscribe"]);
        if (typeof claims === "string") return claims;
        const { contact, workspace } = await load(ctx, claims);
        const channel = claims.ch ?? "email";
        return renderPage(ctx, "unsubscribe", {
          title: "Unsubscribe",
          token: ctx.params.token,
          channelName: CHANNEL_NAMES[channel as Channel] ?? channel,
          workspaceName: workspace.name,
          address: channel === "email" ? contact.email : (contact.phone ?? contact.email),
          preferencesUrl: preferencesUrl(
            signLinkToken({ typ: "preferences", ws: claims.ws, sub: claims.sub }),
          ),
        });
      },
    }),

    /**
     * Opt out of the token's channel (`channel=all`: every channel). Source
     * `one_click` for a mail client's RFC 8058 post (`List-Unsubscribe=One-Click`),
     * else `link`; emits `unsubscribe.<channel>` with the message once (again: 200, no event).
     */
    unsubscribe: defineAction({
      rest: "POST /unsubscribe",
      auth: "public",
      openapi: {
        tags,
        summary: "Unsubscribe (one click or the confirm page's form)",
        responses: {
          "200": {
            description: "Unsubscribed (HTML when the browser prefers it)",
            content: {
              "application/json": {
                schema: Type.Object({ success: Type.Literal(true), channel: Type.String() }),
              },
              "text/html": { schema: { type: "string" } },
            },
          },
          "400": badLink,
          "4XX": ERROR,
        },
      },
      params: Params(
        {
          token: Type.Optional(Token),
          channel: Type.Optional(Type.Literal("all")),
          "List-Unsubscribe": Type.Optional(Type.String({ maxLength: 20 })),
        },
        { additionalProperties: true },
      ),
      async handler(ctx) {
        const claims = await claimsOr(ctx, ctx.params.token, ["unsubscribe"]);
        if (typeof claims === "string") return claims;
        const oneClick = ctx.params["List-Unsubscribe"] === "One-Click";
        const channel = ctx.params.channel === "all" ? "all" : (claims.ch ?? "email");
        const { workspace } = await load(ctx, claims);
        await systemCall(ctx, claims.ws, "contacts.applyPreferences", {
          contactId: claims.sub,
          ...(channel === "all" ? { all: "opted_out" } : { channels: { [channel]: "opted_out" } }),
          source: oneClick ? "one_click" : "link",
          messageId: claims.mid ?? null,
        });
        if (!prefersHtml(ctx.meta.accept)) return { success: true as const, channel };
        return renderPage(ctx, "unsubscribed", {
          title: "Unsubscribed",
          channel,
          channelName: CHANNEL_NAMES[channel as Channel] ?? channel,
          workspaceName: workspace.name,
          preferencesUrl: preferencesUrl(
            signLinkToken({ typ: "preferences", ws: claims.ws, sub: claims.sub }),
          ),
        });
      },
    }),

    /** The preference centre: channels and topics (HTML when the browser prefers it, else JSON). Public; the token authorises. */
    preferencesGet: defineAction({
      rest: "GET /preferences",
      auth: "public",
      openapi: {
        tags,
        summary: "The preference centre (HTML or JSON)",
        responses: {
          "200": {
            description: "The contact's channels and topics",
            content: {
              "application/json": { schema: PreferencesSchema },
              "text/html": { schema: { type: "string" } },
            },
          },
          "400": badLink,
          "4XX": ERROR,
        },
      },
      params: Params({ token: Type.Optional(Token) }),
      async handler(ctx) {
        const claims = await claimsOr(ctx, ctx.params.token, ["preferences", "unsubscribe"]);
        if (typeof claims === "string") return claims;
        const { contact, workspace, channels } = await load(ctx, claims);
        if (prefersHtml(ctx.meta.accept))
          return preferencesPage(ctx, ctx.params.token as string, contact, workspace, channels);
        return preferencesOf(contact, workspace, channels);
      },
    }),

    /** Apply the contact's choices (source `preference_centre`; topics in `attributes.topics`). Public; the token authorises. */
    preferencesPut: defineAction({
      rest: "PUT /preferences",
      auth: "public",
      openapi: { tags, summary: "Change channels and topics from the preference centre" },
      params: Params({
        token: Type.Optional(Token),
        channels: Type.Optional(
          Type.Partial(
            Type.Object(
              Object.fromEntries(CHANNELS.map((c) => [c, StringEnum(["opted_in", "opted_out"])])) as Record<
                (typeof CHANNELS)[number],
                ReturnType<typeof StringEnum<["opted_in", "opted_out"]>>
              >,
              { additionalProperties: false },
            ),
          ),
        ),
        topics: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Boolean())),
      }),
      result: PreferencesSchema,
      async handler(ctx) {
        const claims = verifyLinkToken(ctx.params.token, ["preferences", "unsubscribe"]);
        const { workspace, channels } = await load(ctx, claims);
        const known = new Set((workspace.settings?.topics ?? []).map((t) => t.key));
        const topics = Object.fromEntries(
          Object.entries(ctx.params.topics ?? {}).filter(([key]) => known.has(key)),
        );
        // Only the channels the centre offers; the link's message is what proves the choice was the contact's.
        const wanted = Object.fromEntries(
          Object.entries(ctx.params.channels ?? {}).filter(([c]) => channels.includes(c as Channel)),
        );
        const { contact } = await systemCall<{ contact: Contact }>(
          ctx,
          claims.ws,
          "contacts.applyPreferences",
          {
            contactId: claims.sub,
            channels: wanted,
            topics,
            source: "preference_centre",
            messageId: claims.mid ?? null,
          },
        );
        return preferencesOf(contact, workspace, channels);
      },
    }),

    /** Double opt-in: the token's channel becomes `opted_in` (source from the token, `form`); 302 to `confirmRedirectUrl`, else a page. */
    confirm: defineAction({
      rest: "GET /preferences/confirm",
      auth: "public",
      openapi: {
        tags,
        summary: "Confirm a double opt-in",
        responses: {
          "200": html("Confirmed"),
          "302": {
            description: "To the form's confirmRedirectUrl (a form's double opt-in), else the workspace's",
          },
          "400": badLink,
          "4XX": ERROR,
        },
      },
      params: Params({ token: Type.Optional(Token) }),
      async handler(ctx) {
        const claims = await claimsOr(ctx, ctx.params.token, ["confirm"]);
        if (typeof claims === "string") return claims;
        const { workspace } = await load(ctx, claims);
        await systemCall(ctx, claims.ws, "contacts.applyPreferences", {
          contactId: claims.sub,
          channels: { [claims.ch ?? "email"]: "opted_in" },
          source: claims.src ?? "form",
        });
        const formRedirect =
          claims.fid && isServiceAvailable(ctx.broker, "forms")
            ? await systemCall<string | null>(ctx, claims.ws, "forms.confirmRedirect", { formId: claims.fid })
            : null;
        const redirect = formRedirect ?? workspace.settings?.confirmRedirectUrl;
        if (typeof redirect === "string" && /^https?:\/\//.test(redirect)) {
          ctx.meta.$statusCode = 302;
          ctx.meta.$location = redirect;
          return null;
        }
        return renderPage(ctx, "message", {
          title: "Subscription confirmed",
          heading: "Thank you",
          text: `Your subscription to ${workspace.name} is confirmed.`,
        });
      },
    }),
  },
};
