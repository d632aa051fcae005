import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { LoggerInstance } from "moleculer";
import * as repo from "./webhooks.repo";
import { open } from "./secret-box";
import { signOutbound } from "./signature";

export { deliveryBody } from "./signature";
import { resolveTarget, TargetRefused } from "./url-guard";

/** Stored response bodies are capped (contract: first 2 KB). */
export const RESPONSE_BODY_CAP = 2048;

export interface DispatcherOptions {
  nodeId: string;
  logger: LoggerInstance;
  /** Waits before attempt 2, 3, ...: attempts in all = delays + 1 (default 2 s and 8 s, 3 attempts). */
  retryDelaysMs: number[];
  timeoutMs: number;
  leaseMs: number;
  pollMs: number;
  concurrency: number;
  /** Whether the SSRF guard applies (production unless private targets are allowed). */
  guard: () => boolean;
}

export interface SendOutcome {
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number;
  /** True when the dispatcher stopped during the request: nothing is recorded, the claim is given back. */
  aborted?: boolean;
}

/** The delay before the next attempt after attempt `attempt` failed, or null when no attempts remain. */
export function retryDelay(attempt: number, delays: number[]): number | null {
  return attempt >= 1 && attempt <= delays.length ? delays[attempt - 1] : null;
}

/** Spec 6.1 headers for one attempt (the timestamp is the attempt's, so is the signature). */
export function deliveryHeaders(
  secret: string,
  body: string,
  delivery: { id: string; event: string },
  attempt: number,
  nowSeconds: number,
): Record<string, string> {
  return {
    "Content-Type": "application/json",
    "Content-Length": String(Buffer.byteLength(body)),
    "User-Agent": "cms-webhooks/1",
    "X-Webhook-Signature": signOutbound(secret, nowSeconds, body),
    "X-Webhook-Timestamp": String(nowSeconds),
    "X-Webhook-Event": delivery.event,
    "X-Webhook-Delivery": delivery.id,
    "X-Webhook-Attempt": String(attempt),
  };
}

/** Pin the connection to the address the guard checked, so a second DNS answer cannot rebind it. */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

/**
 * Sends signed POSTs through keep-alive agents (global fetch is ~3x slower
 * here), never follows redirects (a 3xx is a failure), times out after
 * `timeoutMs`, and keeps the first 2 KB of the answer.
 */
export class Sender {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });
  private readonly inFlight = new Set<http.ClientRequest>();
  private stopping = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly guard: () => boolean,
  ) {}

  async post(url: string, body: string, headers: Record<string, string>): Promise<SendOutcome> {
    const started = Date.now();
    let target: Awaited<ReturnType<typeof resolveTarget>>;
    try {
      target = await resolveTarget(url, this.guard());
    } catch (err) {
      const message = err instanceof TargetRefused ? err.message : String(err);
      return { statusCode: null, responseBody: null, error: message, durationMs: Date.now() - started };
    }
    return new Promise<SendOutcome>((resolve) => {
      const isHttps = target.url.protocol === "https:";
      const req = (isHttps ? https : http).request(target.url, {
        method: "POST",
        agent: isHttps ? this.httpsAgent : this.httpAgent,
        headers,
        ...(target.address ? { lookup: pinnedLookup(target.address, target.family ?? 4) } : {}),
      });
      this.inFlight.add(req);
      let settled = false;
      const finish = (outcome: Omit<SendOutcome, "durationMs">) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.inFlight.delete(req);
        resolve({ ...outcome, durationMs: Date.now() - started, ...(this.stopping ? { aborted: true } : {}) });
      };
      const timer = setTimeout(() => {
        req.destroy(new Error(`timed out after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on("data", (chunk: Buffer) => {
          if (kept < RESPONSE_BODY_CAP) {
            const part = chunk.subarray(0, RESPONSE_BODY_CAP - kept);
            chunks.push(part);
            kept += part.length;
          }
        });
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          // PostgreSQL text cannot hold NUL characters.
          const text = Buffer.concat(chunks).toString("utf8").replaceAll(String.fromCharCode(0), "");
          const ok = status >= 200 && status < 300;
          finish({ statusCode: status, responseBody: text, error: ok ? null : `HTTP ${status}` });
        });
        res.on("error", (err) => finish({ statusCode: res.statusCode ?? null, responseBody: null, error: err.message }));
      });
      req.on("error", (err) => finish({ statusCode: null, responseBody: null, error: err.message }));
      req.end(body);
    });
  }

  /** Abort every request in flight (their outcomes come back marked `aborted`) and close idle sockets. */
  stop(): void {
    this.stopping = true;
    for (const req of this.inFlight) req.destroy(new Error("dispatcher stopping"));
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** One attempt for a claimed delivery: sign, send, and say what to record. */
export async function attempt(
  sender: Sender,
  row: repo.ClaimedDelivery,
  retryDelaysMs: number[],
  options: { scheduleRetries: boolean },
): Promise<{ result: repo.AttemptResult; aborted: boolean }> {
  const attemptNo = row.attempt + 1;
  const base = { id: row.id, token: row.claim_token, attempt: attemptNo };
  const fail = (error: string) => ({
    aborted: false,
    result: { ...base, attempt: row.attempt, success: false, statusCode: null, responseBody: null, error, durationMs: null, nextAttemptAt: null },
  });
  if (!row.active) return fail("Endpoint is inactive");
  if (!row.url || !row.secret_sealed) return fail("Endpoint has no url or secret");

  const body = row.body;
  const headers = deliveryHeaders(open(row.secret_sealed), body, row, attemptNo, Math.floor(Date.now() / 1000));
  const outcome = await sender.post(row.url, body, headers);
  const success = outcome.error === null;
  const delay = success || !options.scheduleRetries ? null : retryDelay(attemptNo, retryDelaysMs);
  return {
    aborted: outcome.aborted === true,
    result: {
      ...base,
      success,
      statusCode: outcome.statusCode,
      responseBody: outcome.responseBody,
      error: outcome.error,
      durationMs: outcome.durationMs,
      nextAttemptAt: delay === null ? null : new Date(Date.now() + delay),
    },
  };
}

/**
 * The outbound queue worker of one replica: claims due rows (SKIP LOCKED,
 * with a lease), sends up to `concurrency` at a time, records results in
 * grouped statements, wakes itself for retries and polls for work of others.
 */
export class Dispatcher {
  readonly sender: Sender;
  private stopped = true;
  private pumping = false;
  private again = false;
  private inFlight = 0;
  private queue: repo.ClaimedDelivery[] = [];
  private pending: repo.AttemptResult[] = [];
  private flushing: Promise<void> | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();
  private poller?: NodeJS.Timeout;
  private readonly active = new Set<Promise<unknown>>();

  constructor(private readonly opts: DispatcherOptions) {
    this.sender = new Sender(opts.timeoutMs, opts.guard);
  }

  start(): void {
    this.stopped = false;
    this.poller = setInterval(() => this.wake(), this.opts.pollMs);
    this.poller.unref();
    this.wake();
  }

  /** Look for due work now (new rows, a timer, a poll). */
  wake(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    void this.pump();
  }

  /** One pass of the queue for an external clock (`GET /api/cron/tick`): claims what is due and waits for it. */
  async runOnce(): Promise<{ sent: number }> {
    let sent = 0;
    const rows = await repo.claimDue(this.opts.nodeId, this.opts.concurrency, this.opts.leaseMs);
    await Promise.all(
      rows.map(async (row) => {
        const { result, aborted } = await attempt(this.sender, row, this.opts.retryDelaysMs, { scheduleRetries: true });
        if (aborted) return repo.releaseClaims([{ id: row.id, token: row.claim_token }]);
        sent += 1;
        await repo.recordAttempts([result]);
      }),
    );
    return { sent };
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      do {
        this.again = false;
        // Keep up to one batch claimed ahead of the sends in flight, so slots never wait for a claim query.
        const want = this.opts.concurrency * 2 - this.inFlight - this.queue.length;
        if (want < this.opts.concurrency / 2 || this.stopped) break;
        const rows = await repo.claimDue(this.opts.nodeId, want, this.opts.leaseMs);
        if (this.stopped) {
          await repo.releaseClaims(rows.map((r) => ({ id: r.id, token: r.claim_token })));
          break;
        }
        this.queue.push(...rows);
        this.drain();
        if (rows.length === want) this.again = true;
      } while (this.again && !this.stopped);
    } catch (err) {
      this.opts.logger.warn(`webhook dispatcher: claim failed: ${(err as Error).message}`);
    } finally {
      this.pumping = false;
    }
  }

  /** Start queued sends while slots are free. */
  private drain(): void {
    while (!this.stopped && this.inFlight < this.opts.concurrency && this.queue.length > 0) this.launch(this.queue.shift()!);
  }

  private launch(row: repo.ClaimedDelivery): void {
    this.inFlight += 1;
    const work = attempt(this.sender, row, this.opts.retryDelaysMs, { scheduleRetries: true })
      .then(async ({ result, aborted }) => {
        if (aborted) {
          await repo.releaseClaims([{ id: row.id, token: row.claim_token }]).catch(() => undefined);
          return;
        }
        // The slot is free as soon as the answer is in; the result is written with the next grouped UPDATE.
        this.pending.push(result);
        this.scheduleFlush();
      })
      .catch((err: Error) => this.opts.logger.warn(`webhook dispatcher: delivery ${row.id} failed: ${err.message}`))
      .finally(() => {
        this.inFlight -= 1;
        this.active.delete(work);
        this.drain();
        // Claim in batches: refill once the look-ahead queue runs low, not one claim query per finished send.
        if (this.queue.length + this.inFlight <= this.opts.concurrency) this.wake();
      });
    this.active.add(work);
  }

  /** Record finished attempts in grouped statements, one at a time; results that arrive meanwhile join the next. */
  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = (async () => {
      while (this.pending.length > 0) {
        const batch = this.pending;
        this.pending = [];
        try {
          await repo.recordAttempts(batch);
          for (const r of batch) if (r.nextAttemptAt) this.wakeAt(r.nextAttemptAt);
        } catch (err) {
          // The claims stay until their lease ends, then the deliveries are attempted again.
          this.opts.logger.warn(`webhook dispatcher: recording ${batch.length} attempts failed: ${(err as Error).message}`);
        }
      }
      this.flushing = null;
    })();
  }

  private wakeAt(at: Date): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.wake();
    }, Math.max(0, at.getTime() - Date.now()) + 5);
    timer.unref();
    this.timers.add(timer);
  }

  /** Stop claiming, abort sends in flight (their claims are given back, nothing is recorded). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poller) clearInterval(this.poller);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const queued = this.queue.splice(0);
    await repo.releaseClaims(queued.map((r) => ({ id: r.id, token: r.claim_token }))).catch(() => undefined);
    this.sender.stop();
    await Promise.allSettled([...this.active]);
    this.scheduleFlush();
    if (this.flushing) await this.flushing;
  }
}
