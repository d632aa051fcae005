import { LRUCache } from "lru-cache";
import { send, type Answer } from "../clients/http";
import { ProviderError, type Outgoing, type ProviderClient } from "../clients/types";
import { graphRoot, type Chatapp2Config } from "./config";
import { parameterNames } from "./templates.repo";
import type { WorkspaceId } from "../../../lib/tenancy";

/**
 * `chatapp2`: the WhatsApp Cloud API wire. `POST /{phoneNumberId}/messages`
 * with a bearer token: a free-form text (only inside the 24-hour customer
 * service window, checked before queueing) or an approved template with
 * its body parameters (named, `parameter_name` on each, when the synced
 * template names them); 200 `{messages: [{id}]}`. Refusals are told apart by
 * the Graph error's code, never its text.
 */

const NAME = "chatapp2";

/**
 * Graph error codes that pass: throttling (4, 80007, 130429 the throughput,
 * 131056 the pair rate), and the platform's own trouble (1, 2, 131000,
 * 131016). Any other code is the message's fault: 131047 outside the
 * window, 131026 undeliverable, 132000 parameter count, 190 a dead token.
 * https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes
 */
const TRANSIENT_CODES = new Set([1, 2, 4, 80007, 130429, 131000, 131016, 131056]);
/** The recipient stopped marketing messages from the business in WhatsApp itself: suppressed, not failed. */
const STOPPED_MARKETING_CODE = 131050;
/** The token expired or was revoked (OAuthException). */
export const INVALID_TOKEN_CODE = 190;

/**
 * A Graph API call with the account's token: a path under the config's
 * root, or an absolute URL the API gave (`paging.next`), which must be on
 * the same origin: the token goes to no other host.
 */
export async function graph(
  config: Chatapp2Config,
  method: "GET" | "POST",
  pathOrUrl: string,
  body?: unknown,
): Promise<Answer> {
  const root = graphRoot(config);
  const absolute = /^https?:\/\//.test(pathOrUrl);
  if (absolute && new URL(pathOrUrl).origin !== new URL(root).origin)
    throw new ProviderError(`${NAME}: the API named another host (${new URL(pathOrUrl).origin})`, false);
  const url = absolute ? pathOrUrl : `${root}${pathOrUrl}`;
  return send(NAME, url, {
    method,
    headers: {
      authorization: `Bearer ${config.accessToken}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** A Graph error's code and words (`{error: {code, message, error_data: {details}}}`); code null when the body has none. */
export function graphError(answer: Answer): { code: number | null; detail: string } {
  try {
    const error = (JSON.parse(answer.body) as { error?: Record<string, unknown> }).error ?? {};
    const data = error.error_data as { details?: unknown } | undefined;
    const code = typeof error.code === "number" ? error.code : null;
    const words = [error.message, data?.details].filter((w) => typeof w === "string" && w).join(": ");
    return { code, detail: words || answer.body.slice(0, 500) };
  } catch {
    return { code: null, detail: answer.body.slice(0, 500) };
  }
}

/** A refused send: transient by HTTP status (429, 5xx) or Graph code; a recipient who stopped marketing suppresses it. */
export function refusal(answer: Answer): ProviderError {
  const { code, detail } = graphError(answer);
  const message = `${NAME} ${answer.status}: ${code ?? "no code"} ${detail || "no detail"}`;
  if (code === STOPPED_MARKETING_CODE) return new ProviderError(message, false, "unsubscribed");
  const transient =
    answer.status === 429 || answer.status >= 500 || (code !== null && TRANSIENT_CODES.has(code));
  return new ProviderError(message, transient);
}

/** WhatsApp ids are digits: the E.164 number without its `+`. */
export const waId = (phone: string) => phone.replace(/^\+/, "");

/**
 * The Cloud API's message for our content: a template with its body
 * parameters, else a text. `names`: the template's parameter names, when it
 * uses named ones; `content.parameters` give their values in that order.
 */
export function messageBody(
  to: string,
  content: Outgoing["content"],
  names: string[] | null = null,
): Record<string, unknown> {
  const base = { messaging_product: "whatsapp", recipient_type: "individual", to: waId(to) };
  if (typeof content.templateName === "string") {
    const parameters = Array.isArray(content.parameters) ? content.parameters.map(String) : [];
    return {
      ...base,
      type: "template",
      template: {
        name: content.templateName,
        language: { code: String(content.language ?? "") },
        ...(parameters.length && {
          components: [
            {
              type: "body",
              parameters: parameters.map((text, i) =>
                names?.[i] ? { type: "text", parameter_name: names[i], text } : { type: "text", text },
              ),
            },
          ],
        }),
      },
    };
  }
  return { ...base, type: "text", text: { preview_url: false, body: String(content.text ?? "") } };
}

/** How long a client keeps a template's parameter names (a sync that renames them is seen after this). */
const NAMES_TTL_MS = 60_000;

export function chatapp2Client(id: string, config: Chatapp2Config, workspaceId: WorkspaceId): ProviderClient {
  // Per template and language; an empty list stands for positional (the cache keeps no null).
  const names = new LRUCache<string, string[]>({ max: 500, ttl: NAMES_TTL_MS });
  const namesOf = async (content: Outgoing["content"]): Promise<string[] | null> => {
    if (typeof content.templateName !== "string") return null;
    const key = `${content.templateName}\n${String(content.language ?? "")}`;
    let known = names.get(key);
    if (!known) {
      known = (await parameterNames(workspaceId, content.templateName, String(content.language ?? ""))) ?? [];
      names.set(key, known);
    }
    return known.length ? known : null;
  };
  return {
    id,
    type: NAME,
    async send(message) {
      const answer = await graph(
        config,
        "POST",
        `/${config.phoneNumberId}/messages`,
        messageBody(message.to, message.content, await namesOf(message.content)),
      );
      if (answer.status !== 200) throw refusal(answer);
      const json = JSON.parse(answer.body) as { messages?: Array<{ id?: unknown }> };
      const providerMessageId = json.messages?.[0]?.id;
      if (typeof providerMessageId !== "string" || !providerMessageId)
        throw new ProviderError(`${NAME}: the answer names no message id`, false);
      return { providerMessageId };
    },
  };
}
