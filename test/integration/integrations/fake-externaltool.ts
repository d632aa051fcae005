import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for the external tool's API (the Mailchimp Marketing API
 * v3 wire), recording every request: list members paged by count/offset,
 * the member upsert by hash, Basic auth with "anystring:" + the key, and
 * on demand a 429 with Retry-After, a 5xx, and slow answers (to see how
 * many requests arrive at once).
 */

export interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  body: unknown;
  at: number;
}

export interface FakeMember {
  email_address: string;
  status: string;
  merge_fields: Record<string, string>;
  tags: Array<{ id: number; name: string }>;
}

export class FakeExternalTool {
  readonly requests: Recorded[] = [];
  readonly lists = new Map<string, FakeMember[]>();
  /** Member upserts received, by list and hash. */
  readonly upserts = new Map<string, unknown>();
  apiKey = "";
  /** Offsets whose first GET answers 429 with this Retry-After. */
  rateLimitOnce = new Map<number, string>();
  /** Every request answers this 5xx when set. */
  failWith: number | null = null;
  /** Member upserts answer after this many milliseconds. */
  upsertDelayMs = 0;
  inFlight = 0;
  peakInFlight = 0;
  private server?: Server;

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.inFlight++;
      this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        this.inFlight--;
        res.writeHead(status, { "content-type": "application/problem+json", ...headers });
        res.end(JSON.stringify(body));
      };
      readBody(req).then((raw) => {
        const url = new URL(req.url ?? "/", "http://fake");
        const record: Recorded = {
          method: req.method ?? "",
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          authorization: req.headers.authorization,
          body: raw ? JSON.parse(raw) : undefined,
          at: Date.now(),
        };
        this.requests.push(record);
        this.answer(record, reply);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  reset(): void {
    this.requests.length = 0;
    this.upserts.clear();
    this.rateLimitOnce.clear();
    this.failWith = null;
    this.upsertDelayMs = 0;
    this.peakInFlight = 0;
  }

  private answer(
    r: Recorded,
    reply: (status: number, body: unknown, headers?: Record<string, string>) => void,
  ) {
    const expected = `Basic ${Buffer.from(`anystring:${this.apiKey}`).toString("base64")}`;
    if (r.authorization !== expected)
      return reply(401, { title: "API Key Invalid", status: 401, detail: "Your API key may be invalid." });
    if (this.failWith) return reply(this.failWith, { title: "Internal Server Error", status: this.failWith });
    const members = /^\/3\.0\/lists\/([^/]+)\/members$/.exec(r.path);
    const member = /^\/3\.0\/lists\/([^/]+)\/members\/([0-9a-f]{32})$/.exec(r.path);
    const list = this.lists.get(decodeURIComponent((members ?? member)?.[1] ?? ""));
    if (!list) return reply(404, { title: "Resource Not Found", status: 404 });
    if (members && r.method === "GET") {
      const offset = Number(r.query.offset ?? 0);
      const count = Number(r.query.count ?? 10);
      const retryAfter = this.rateLimitOnce.get(offset);
      if (retryAfter !== undefined) {
        this.rateLimitOnce.delete(offset);
        return reply(429, { title: "Too Many Requests", status: 429 }, { "Retry-After": retryAfter });
      }
      return reply(200, { members: list.slice(offset, offset + count), total_items: list.length });
    }
    if (member && r.method === "PUT") {
      const body = r.body as { email_address?: string };
      if (body.email_address?.includes("fake"))
        return reply(400, {
          title: "Invalid Resource",
          status: 400,
          detail: `${body.email_address} looks fake or invalid, please enter a real email address.`,
        });
      this.upserts.set(`${member[1]}/${member[2]}`, r.body);
      const send = () => reply(200, { id: member[2], ...body });
      if (this.upsertDelayMs) setTimeout(send, this.upsertDelayMs);
      else send();
      return;
    }
    reply(405, { title: "Method Not Allowed", status: 405 });
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (raw += chunk));
    req.on("end", () => resolve(raw));
  });
}
