import { fieldError, upstreamError } from "../../../lib/errors";
import type { Answer } from "../clients/http";
import { graph, graphError, INVALID_TOKEN_CODE } from "./client";
import type { Chatapp2Config } from "./config";
import { approvedOf, type SyncedTemplate } from "./templates";

/**
 * The account's Graph reads made while a person waits (connecting,
 * syncing templates): a 200 body, else an answer that person can act on:
 * 400 naming `config.accessToken` for a refused token, `config.<field>` for
 * an id the token does not reach, 502 UPSTREAM_ERROR when the API cannot be
 * reached or fails on its side.
 */
export async function readAccount(
  config: Chatapp2Config,
  pathOrUrl: string,
  field: "phoneNumberId" | "businessAccountId",
): Promise<Record<string, unknown>> {
  let answer: Answer;
  try {
    answer = await graph(config, "GET", pathOrUrl);
  } catch (err) {
    throw upstreamError(`The WhatsApp Cloud API could not be reached: ${(err as Error).message}`);
  }
  if (answer.status === 200) {
    try {
      return JSON.parse(answer.body) as Record<string, unknown>;
    } catch {
      throw upstreamError("The WhatsApp Cloud API answered something that is not JSON");
    }
  }
  const { code, detail } = graphError(answer);
  if (answer.status === 401 || code === INVALID_TOKEN_CODE)
    throw fieldError(
      "config.accessToken",
      `is refused by the WhatsApp Cloud API (${code ?? answer.status}: ${detail})`,
    );
  if (answer.status >= 500 || answer.status === 429)
    throw upstreamError(`The WhatsApp Cloud API failed (${answer.status}: ${detail})`);
  throw fieldError(
    `config.${field}`,
    `is not reachable with this token (${code ?? answer.status}: ${detail})`,
  );
}

/** Pages followed at most in one sync (a runaway `paging.next` stops here). */
const MAX_PAGES = 200;

/** Every approved template of the account, following `paging.next` to the last page (400 or 502 as `readAccount`). */
export async function fetchApproved(config: Chatapp2Config): Promise<SyncedTemplate[]> {
  const templates: SyncedTemplate[] = [];
  let next: string | null = `/${config.businessAccountId}/message_templates?limit=100`;
  for (let page = 0; next && page < MAX_PAGES; page++) {
    const json = await readAccount(config, next, "businessAccountId");
    templates.push(...approvedOf(Array.isArray(json.data) ? json.data : []));
    const paging = json.paging as { next?: unknown } | undefined;
    next = typeof paging?.next === "string" ? paging.next : null;
  }
  return templates;
}
