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
  /** Of those, how many one endpoint may have; it has one batch more claimed. */
  endpointConcurrency: number;
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

/** One endpoint's share of a dispatcher: claimed rows waiting in the queue, sends in flight. */
interface EndpointLoad {
  queued: number;
  sending: number;
}

/**
 * The outbound queue worker of one replica: claims due rows (SKIP LOCKED,
 * with a lease), sends up to `concurrency` at a time, records results in
 * grouped statements, wakes itself for retries and polls for work of others.
 * One endpoint has at most `endpointConcurrency` of those sends in flight
 * (one while it fails) and one batch more claimed, so slow or failing
 * endpoints leave the other slots to healthy ones.
 */
export class Dispatcher {
  readonly sender: Sender;
  private readonly endpointConcurrency: number;
  private stopped = true;
  private pumping = false;
  private again = false;
  private inFlight = 0;
  private queue: repo.ClaimedDelivery[] = [];
  private readonly load = new Map<string, EndpointLoad>();
  /** Endpoints whose last answered attempt failed. */
  private readonly failing = new Set<string>();
  private claiming: Promise<unknown> = Promise.resolve();
  private pending: repo.AttemptResult[] = [];
  private flushing: Promise<void> | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();
  private poller?: NodeJS.Timeout;
  private readonly active = new Set<Promise<unknown>>();

  constructor(private readonly opts: DispatcherOptions) {
    this.sender = new Sender(opts.timeoutMs, opts.guard);
    this.endpointConcurrency = opts.endpointConcurrency;
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
    const rows = await this.claim(this.opts.concurrency, 1);
    await Promise.all(
      rows.map(async (row) => {
        this.started(row);
        let outcome: repo.AttemptResult | undefined;
        try {
          const { result, aborted } = await attempt(this.sender, row, this.opts.retryDelaysMs, { scheduleRetries: true });
          if (aborted) return await repo.releaseClaims([{ id: row.id, token: row.claim_token }]);
          outcome = result;
          sent += 1;
          await repo.recordAttempts([result]);
        } finally {
          this.finished(row, outcome);
        }
      }),
    );
    return { sent };
  }

  /** Sends an endpoint may have in flight; a failing one is sent one at a time (a probe) until it answers 2xx. */
  private capOf(endpointId: string): number {
    return this.failing.has(endpointId) ? 1 : this.endpointConcurrency;
  }

  /**
   * Claim up to `limit` due rows, at most `batches` × its cap claimed per
   * endpoint, from endpoints with room for half a batch (refilled a few rows
   * at a time). Claims run one at a time (the pump, a cron pass), so each
   * sees what the last one took.
   */
  private claim(limit: number, batches: number): Promise<repo.ClaimedDelivery[]> {
    const claimed = this.claiming.then(async () => {
      const room: Record<string, number> = {};
      for (const id of new Set([...this.load.keys(), ...this.failing])) {
        const load = this.load.get(id);
        room[id] = Math.max(0, batches * this.capOf(id) - (load ? load.queued + load.sending : 0));
      }
      const rows = await repo.claimDue(this.opts.nodeId, limit, this.opts.leaseMs, {
        minRoom: Math.ceil(this.endpointConcurrency / 2),
        perEndpoint: batches * this.endpointConcurrency,
        room,
        probing: [...this.failing],
      });
      for (const row of rows) {
        const load = this.load.get(row.endpoint_id) ?? { queued: 0, sending: 0 };
        load.queued += 1;
        this.load.set(row.endpoint_id, load);
      }
      return rows;
    });
    this.claiming = claimed.catch(() => undefined);
    return claimed;
  }

  private started(row: repo.ClaimedDelivery): void {
    const load = this.load.get(row.endpoint_id)!;
    load.queued -= 1;
    load.sending += 1;
  }

  /**
   * A send is over (answered, failed to send, or aborted): free its place.
   * An answered attempt says whether the endpoint is failing; closing one
   * without a request (inactive endpoint) says nothing. An endpoint that
   * starts failing gives its queued rows back: behind one probe at a time
   * they could wait past their lease.
   */
  private finished(row: repo.ClaimedDelivery, outcome?: repo.AttemptResult): void {
    const load = this.load.get(row.endpoint_id);
    if (load) load.sending -= 1;
    if (outcome && outcome.durationMs !== null) {
      if (outcome.success) this.failing.delete(row.endpoint_id);
      else if (!this.failing.has(row.endpoint_id)) {
        this.failing.add(row.endpoint_id);
        void this.giveBack((r) => r.endpoint_id === row.endpoint_id);
      }
    }
    if (load && load.queued === 0 && load.sending === 0) this.load.delete(row.endpoint_id);
  }

  /** Take matching rows out of the queue and release their claims (nothing recorded, another claim sends them). */
  private async giveBack(which: (row: repo.ClaimedDelivery) => boolean): Promise<void> {
    const back = this.queue.filter(which);
    if (back.length === 0) return;
    this.queue = this.queue.filter((row) => !which(row));
    for (const row of back) this.load.get(row.endpoint_id)!.queued -= 1;
    await repo
      .releaseClaims(back.map((r) => ({ id: r.id, token: r.claim_token })))
      .catch((err: Error) => this.opts.logger.warn(`webhook dispatcher: giving back ${back.length} claims failed: ${err.message}`));
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      do {
        this.again = false;
        // Keep up to two batches claimed ahead of the sends in flight and claim one when a batch is left: a claim
        // takes about as long as a batch of sends, so the slots never wait for one.
        const want = this.opts.concurrency * 3 - this.inFlight - this.queue.length;
        if (want < this.opts.concurrency || this.stopped) break;
        const rows = await this.claim(want, 2);
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

  /** Start queued sends while slots are free; rows of an endpoint at its cap wait for its own sends to finish. */
  private drain(): void {
    for (let i = 0; i < this.queue.length && this.inFlight < this.opts.concurrency && !this.stopped; ) {
      const row = this.queue[i];
      if (this.load.get(row.endpoint_id)!.sending < this.capOf(row.endpoint_id)) {
        this.queue.splice(i, 1);
        this.launch(row);
      } else i += 1;
    }
  }

  private launch(row: repo.ClaimedDelivery): void {
    this.inFlight += 1;
    this.started(row);
    let outcome: repo.AttemptResult | undefined;
    const work = attempt(this.sender, row, this.opts.retryDelaysMs, { scheduleRetries: true })
      .then(async ({ result, aborted }) => {
        if (aborted) {
          await repo.releaseClaims([{ id: row.id, token: row.claim_token }]).catch(() => undefined);
          return;
        }
        // The slot is free as soon as the answer is in; the result is written with the next grouped UPDATE.
        outcome = result;
        this.pending.push(result);
        this.scheduleFlush();
      })
      .catch((err: Error) => this.opts.logger.warn(`webhook dispatcher: delivery ${row.id} failed: ${err.message}`))
      .finally(() => {
        this.inFlight -= 1;
        this.finished(row, outcome);
        this.active.delete(work);
        this.drain();
        // Claim in batches, not one claim query per finished send: while every slot is busy, once one batch is
        // left ahead; with slots free (what is queued waits for its endpoint's cap), once this endpoint's ran out.
        const busy = this.inFlight === this.opts.concurrency;
        if (busy ? this.queue.length <= this.opts.concurrency : !this.load.get(row.endpoint_id)?.queued) this.wake();
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
    await this.giveBack(() => true);
    this.sender.stop();
    await Promise.allSettled([...this.active]);
    this.scheduleFlush();
    if (this.flushing) await this.flushing;
  }
}
