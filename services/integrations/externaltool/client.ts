import { fieldError, upstreamError } from "../../../lib/errors";
import pLimit from "p-limit";
import type { MemberUpsert, RemoteMember } from "./members";
import { subscriberHash } from "./members";

/**
 * The external tool's wire (Mailchimp Marketing API v3): Basic auth with
 * "anystring:" + the API key, members paged by `count`/`offset`, at most
 * 10 requests at once from this process (the API's published limit),
 * a 429 retried after its `Retry-After`. A refused key is the caller's to
 * fix (400 naming the setting); an API out of reach or failing is a 502.
 */

export interface ExternalToolSettings {
  baseUrl: string;
  apiKey: string;
}

/** The API's published limit on simultaneous connections per key; one process shares it. */
export const MAX_CONCURRENT = 10;
const limit = pLimit(MAX_CONCURRENT);

/** The most members one page may hold. */
export const MAX_PAGE = 1000;
const TIMEOUT_MS = 30_000;
/** 429s answered in a row before the call gives up. */
const MAX_RATE_LIMITED = 5;
/** A Retry-After longer than this is not waited for inside a request. */
const MAX_RETRY_AFTER_S = 60;

/** The API's error body (problem details). */
interface Problem {
  title?: string;
  detail?: string;
}

/** A request's answer the caller decides on (the member upsert's own refusals). */
type Answer = { ok: true; body: unknown } | { ok: false; status: number; problem: Problem };

/** Seconds to wait from a `Retry-After` (seconds or an HTTP date); 1 when absent or unreadable. */
export function retryAfterSeconds(header: string | null, now = Date.now()): number {
  if (!header) return 1;
  const seconds = Number(header);
  const wait = Number.isFinite(seconds) ? seconds : (Date.parse(header) - now) / 1000;
  return Number.isFinite(wait) ? Math.min(MAX_RETRY_AFTER_S, Math.max(0, wait)) : 1;
}

const describe = (status: number, problem: Problem) =>
  `${status}${problem.title ? ` ${problem.title}` : ""}${problem.detail ? `: ${problem.detail}` : ""}`;

/** One page of a list's members. */
export interface MembersPage {
  total: number;
  received: number;
  members: RemoteMember[];
}

export class ExternalToolClient {
  private readonly root: string;
  private readonly authorization: string;

  constructor(settings: ExternalToolSettings) {
    this.root = `${settings.baseUrl.replace(/\/+$/, "")}/3.0`;
    this.authorization = `Basic ${Buffer.from(`anystring:${settings.apiKey}`).toString("base64")}`;
  }

  /** One page of a list's members and the list's total. */
  async members(listId: string, count: number, offset: number): Promise<MembersPage> {
    const query = new URLSearchParams({ count: String(count), offset: String(offset) });
    const answer = await this.request("GET", `/lists/${encodeURIComponent(listId)}/members?${query}`);
    if (!answer.ok) {
      if (answer.status === 404) throw fieldError("listId", "is not a list of the external tool");
      throw upstreamError(
        `The external tool refused the member list: ${describe(answer.status, answer.problem)}`,
      );
    }
    const body = answer.body as { members?: unknown; total_items?: unknown } | null;
    if (!Array.isArray(body?.members) || typeof body.total_items !== "number")
      throw upstreamError("The external tool answered the member list without members and total_items");
    // `received` counts what the page held, so the next offset is right even past a malformed entry.
    const members = (body.members as unknown[]).filter(
      (m): m is RemoteMember => typeof m === "object" && m !== null,
    );
    return { total: body.total_items, received: body.members.length, members };
  }

  /** Create or update a member by its hash; a refusal of this member (400) is answered, not thrown. */
  async upsertMember(
    listId: string,
    member: MemberUpsert,
  ): Promise<{ ok: true } | { ok: false; error: string }> {
    const hash = subscriberHash(member.email_address);
    const answer = await this.request("PUT", `/lists/${encodeURIComponent(listId)}/members/${hash}`, member);
    if (answer.ok) return { ok: true };
    if (answer.status === 404) throw fieldError("listId", "is not a list of the external tool");
    if (answer.status === 400) return { ok: false, error: describe(answer.status, answer.problem) };
    throw upstreamError(`The external tool refused a member: ${describe(answer.status, answer.problem)}`);
  }

  /** One call through the process's limit; 429 waited out and retried, auth refusals and failures thrown. */
  private async request(method: string, path: string, body?: unknown): Promise<Answer> {
    for (let limited = 0; ; limited++) {
      const res = await limit(() => this.send(method, path, body));
      if (res.status === 429 && limited < MAX_RATE_LIMITED) {
        await new Promise((resolve) => setTimeout(resolve, retryAfterSeconds(res.retryAfter) * 1000));
        continue;
      }
      if (res.status >= 200 && res.status < 300) return { ok: true, body: res.parsed };
      const problem = (res.parsed ?? {}) as Problem;
      if (res.status === 401 || res.status === 403)
        throw fieldError(
          "settings.externaltool.apiKey",
          `was refused by the external tool (${describe(res.status, problem)})`,
        );
      if (res.status === 429) throw upstreamError("The external tool kept answering 429 Too Many Requests");
      if (res.status >= 500)
        throw upstreamError(`The external tool failed: ${describe(res.status, problem)}`);
      return { ok: false, status: res.status, problem };
    }
  }

  /** The request and its whole answer, read inside the limit: a connection counts until its body is read. */
  private async send(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; retryAfter: string | null; parsed: unknown }> {
    try {
      const res = await fetch(`${this.root}${path}`, {
        method,
        headers: {
          Authorization: this.authorization,
          Accept: "application/json",
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      const text = await res.text();
      let parsed: unknown = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        // A non-JSON answer (a proxy's error page) carries no problem details.
      }
      return { status: res.status, retryAfter: res.headers.get("retry-after"), parsed };
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (err as Error).message;
      throw upstreamError(`The external tool could not be reached: ${reason}`);
    }
  }
}
