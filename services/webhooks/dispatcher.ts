import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { LoggerInstance, MetricRegistry } from "moleculer";
import * as deliveriesRepo from "./deliveries.repo";
import { countWebhookDeliveries } from "../../lib/business-metrics";
import { stepPoller } from "../../lib/periodic-steps";
import { open } from "../../lib/secret-box";
import type { Poller } from "../../lib/worker";
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
  concurrency: number;
  /** Of those, how many one endpoint may have; it has one batch more claimed. */
  endpointConcurrency: number;
  /** Whether the SSRF guard applies (production unless private targets are allowed). */
  guard: () => boolean;
  /** The broker's metrics: the claim loop's passes, the deliveries' outcomes. */
  metrics?: MetricRegistry;
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
  return (_host, options, callback) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

/**
 * Sends signed POSTs through keep-alive agents (global fetch is ~3x slower
 * here), never follows redirects (a 3xx is a failure), times out after
 * `timeoutMs`, and keeps the first 2 KB of the answer.
 */
export class Sender {
  // No per-host socket cap: the dispatcher bounds its sends (slots, and those that lapsed), and a cap here would
  // queue a host's healthy endpoints behind its hanging ones (many customers' endpoints share one host).
  private readonly httpAgent = new http.Agent({ keepAlive: true });
  private readonly httpsAgent = new https.Agent({ keepAlive: true });
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
        resolve({
          ...outcome,
          durationMs: Date.now() - started,
          ...(this.stopping ? { aborted: true } : {}),
        });
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
        res.on("error", (err) =>
          finish({ statusCode: res.statusCode ?? null, responseBody: null, error: err.message }),
        );
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

/** What an attempt came to: delivered, to be tried again, or dead (retries spent, or a retry by hand that failed). */
export const outcomeOf = (result: deliveriesRepo.AttemptResult) =>
  result.success ? "delivered" : result.nextAttemptAt ? "retry" : "dead";

/** One attempt for a claimed delivery: sign, send, and say what to record. */
export async function attempt(
  sender: Sender,
  row: deliveriesRepo.ClaimedDelivery,
  retryDelaysMs: number[],
  options: { scheduleRetries: boolean },
): Promise<{ result: deliveriesRepo.AttemptResult; aborted: boolean }> {
  const attemptNo = row.attempt + 1;
  const base = { id: row.id, token: row.claim_token, attempt: attemptNo };
  const fail = (error: string) => ({
    aborted: false,
    result: {
      ...base,
      attempt: row.attempt,
      success: false,
      statusCode: null,
      responseBody: null,
      error,
      durationMs: null,
      nextAttemptAt: null,
    },
  });
  if (!row.active) return fail("Endpoint is inactive");
  if (!row.url || !row.secret_sealed) return fail("Endpoint has no url or secret");

  const body = row.body;
  const headers = deliveryHeaders(
    open(row.secret_sealed),
    body,
    row,
    attemptNo,
    Math.floor(Date.now() / 1000),
  );
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

/** The most batches (of `concurrency` rows) a dispatcher keeps claimed ahead of its sends. */
export const MAX_AHEAD_BATCHES = 20;

/**
 * How many batches (of `concurrency` rows) to keep claimed ahead of the sends: what the sends use up in two claims'
 * time at the rate they go out, so the slots never wait for a claim (a claim's rows are few against its cost when
 * the database answers slowly); at least 2, at most MAX_AHEAD_BATCHES, and no more than the sends get through in a
 * quarter of the lease, so rows claimed ahead go out long before another replica may take them.
 */
export function aheadBatches(
  sendsPerSec: number,
  claimMs: number,
  concurrency: number,
  leaseMs: number,
): number {
  const wanted = Math.ceil((2 * sendsPerSec * claimMs) / 1000 / concurrency);
  const withinLease = Math.floor((sendsPerSec * leaseMs) / 4000 / concurrency);
  return Math.max(2, Math.min(wanted, withinLease, MAX_AHEAD_BATCHES));
}

/** One endpoint's share of a dispatcher: claimed rows waiting in the queue, sends in flight. */
interface EndpointLoad {
  queued: number;
  /** When each send in flight started, by delivery id, oldest first. */
  sends: Map<string, number>;
  /** Its last answer was a 2xx within `fastMs`. */
  fast: boolean;
  /** Its 2xx answers in a row: its cap grows by one with each (slow start, see `capOf`). */
  streak: number;
}

/** An endpoint whose last answered attempt failed: probed one attempt at a time, the probes spaced out. */
interface Failing {
  /** Failed answers in a row. */
  failures: number;
  /** No probe before this (`performance.now()` time). */
  probeAt: number;
}

/** Sends past `fastMs` hold a socket, not a slot; at most this many per slot, so sockets stay bounded. */
const LAPSED_PER_SLOT = 20;

/**
 * The outbound queue worker of one replica: claims due rows (SKIP LOCKED,
 * with a lease), sends up to `concurrency` at a time, records results in
 * grouped statements, wakes itself for retries and polls for work of others.
 * One endpoint has `endpointConcurrency` of those sends in flight (one while
 * it fails) and one batch more claimed, so slow or failing endpoints leave
 * the other slots to healthy ones. Slots no other endpoint waits for are lent
 * beyond the cap to endpoints answering fast, up to all but one cap's worth
 * (kept for endpoints within their cap), and come back as their sends
 * complete: a lone busy endpoint is not held to its cap. A slot is work
 * starting or finishing, not a socket: a send unanswered after `fastMs` gives
 * its slot back and runs on to the timeout, counted by its endpoint's cap
 * only, so endpoints that turn slow or hang hold sockets, not slots. New
 * endpoints start at one send in flight (slow start) and failing ones are
 * probed one attempt at a time with a growing gap (`failed`).
 */
export class Dispatcher {
  readonly sender: Sender;
  private readonly endpointConcurrency: number;
  /** An endpoint answers fast while its sends take less than this (a 20th of the timeout). */
  private readonly fastMs: number;
  /** An endpoint is claimed for only with room for this many (half a cap). */
  private readonly minRoom: number;
  private stopped = true;
  /** Sends holding a slot: every send in flight but those that lapsed. */
  private inFlight = 0;
  /** Sends still in flight after `fastMs`: their slots went back. */
  private lapsed = 0;
  private queue: deliveriesRepo.ClaimedDelivery[] = [];
  private readonly load = new Map<string, EndpointLoad>();
  /** Endpoints whose last answered attempt failed. */
  private readonly failing = new Map<string, Failing>();
  /** The first wait between probes of a failing endpoint (half the first retry delay), doubling per failure. */
  private readonly probeGapMs: number;
  /** The longest such wait: the longest retry delay. */
  private readonly maxProbeGapMs: number;
  private claiming: Promise<unknown> = Promise.resolve();
  /** Batches claimed ahead for endpoints that answer fast (`aheadBatches`), from the last claim's time and the rate. */
  private ahead = 2;
  /** Sends finished since `rateSince` (`performance.now()` time), and their rate over the claims before. */
  private finishedSends = 0;
  private rateSince = performance.now();
  private sendsPerSec = 0;
  private pending: deliveriesRepo.AttemptResult[] = [];
  private flushing: Promise<void> | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The claim loop: woken by new rows, finished sends and retry times, and every WEBHOOK_POLL_MS for the rest. */
  private readonly poller: Poller;
  private readonly active = new Set<Promise<unknown>>();

  constructor(private readonly opts: DispatcherOptions) {
    this.sender = new Sender(opts.timeoutMs, opts.guard);
    this.endpointConcurrency = opts.endpointConcurrency;
    this.fastMs = opts.timeoutMs / 20;
    this.minRoom = Math.ceil(opts.endpointConcurrency / 2);
    this.probeGapMs = (opts.retryDelaysMs[0] ?? 2000) / 2;
    this.maxProbeGapMs = Math.max(this.probeGapMs, ...opts.retryDelaysMs);
    this.poller = stepPoller("webhooks.dispatchDue", {
      logger: opts.logger,
      metrics: opts.metrics,
      passAtStart: true,
      onInterval: () => {
        this.forgetIdle();
        void this.pruneFailing();
      },
      pass: () => this.claimPass(),
      failureNote: "due rows wait for the next wake or poll",
    });
  }

  /** Endpoints sent one attempt at a time until one succeeds. */
  get failingEndpoints(): ReadonlyMap<string, Failing> {
    return this.failing;
  }

  start(): void {
    this.stopped = false;
    this.poller.start();
  }

  /** Look for due work now (new rows, a timer, a poll). */
  wake(): void {
    if (this.stopped) return;
    this.poller.wake();
  }

  /** One pass of the queue for an external clock (`GET /api/cron/tick`): claims what is due and waits for it. */
  async runOnce(): Promise<{ sent: number }> {
    let sent = 0;
    const rows = await this.claim(this.opts.concurrency, 1);
    await Promise.all(
      rows.map(async (row) => {
        this.started(row);
        let outcome: deliveriesRepo.AttemptResult | undefined;
        try {
          const { result, aborted } = await attempt(this.sender, row, this.opts.retryDelaysMs, {
            scheduleRetries: true,
          });
          if (aborted) return await deliveriesRepo.releaseClaims([{ id: row.id, token: row.claim_token }]);
          outcome = result;
          sent += 1;
          await deliveriesRepo.recordAttempts([result]);
        } finally {
          this.finished(row, outcome);
        }
      }),
    );
    return { sent };
  }

  /**
   * Sends an endpoint may have in flight: a failing one is sent one at a time (a probe) until it answers 2xx;
   * another starts at one and gains one per 2xx answer in a row, up to the cap (slow start), so an endpoint that
   * hangs from its first request holds one send, not a cap's worth, until the timeout says it fails.
   */
  private capOf(endpointId: string): number {
    if (this.failing.has(endpointId)) return 1;
    return Math.min(this.endpointConcurrency, 1 + (this.load.get(endpointId)?.streak ?? 0));
  }

  /**
   * Whether an endpoint may borrow slots beyond its cap: at its full cap, its last answer a fast 2xx and none of
   * its sends older than `fastMs`, so borrowed slots come back soon. One that never answered (or hangs) cannot.
   */
  private mayBorrow(endpointId: string, load: EndpointLoad): boolean {
    if (!load.fast || this.failing.has(endpointId) || this.capOf(endpointId) < this.endpointConcurrency)
      return false;
    const oldest = load.sends.values().next();
    return oldest.done === true || performance.now() - oldest.value < this.fastMs;
  }

  /**
   * Drop the loads of endpoints with nothing claimed or in flight once a poll period, not as they empty: an
   * endpoint sending faster than claims return empties between two claims, and would lose its `fast` each time.
   */
  private forgetIdle(): void {
    for (const [id, load] of this.load) if (load.queued === 0 && load.sends.size === 0) this.load.delete(id);
  }

  /**
   * Endpoints leave the failing set once deleted, made inactive or left with nothing queued (every delivery sent
   * or out of attempts), so it never holds more than the endpoints with queued deliveries. Deliveries queued for
   * one later start at the full cap, and the first failed answer puts it back.
   */
  private async pruneFailing(): Promise<void> {
    if (this.failing.size === 0) return;
    const ids = [...this.failing.keys()];
    try {
      const keep = new Set(await deliveriesRepo.endpointsWithQueue(ids));
      for (const id of ids) if (!keep.has(id)) this.failing.delete(id);
    } catch (err) {
      this.opts.logger.warn(
        `webhook dispatcher: checking failing endpoints failed: ${(err as Error).message}`,
      );
    }
  }

  /**
   * How many more rows of an endpoint a claim may take: up to `batches` caps claimed or in flight. While it may
   * borrow, up to `batches` times the slots it may use (its cap, or the lendable ones other endpoints leave)
   * claimed ahead of its sends: one endpoint's fast answers outpace a claim, and its slots would wait for the next.
   * A failing endpoint: one row, once its next probe is due.
   */
  private roomOf(endpointId: string, batches: number): number {
    const load = this.load.get(endpointId);
    const held = load ? load.queued + load.sends.size : 0;
    const failing = this.failing.get(endpointId);
    if (failing) return performance.now() < failing.probeAt ? 0 : Math.max(0, 1 - held);
    if (load && this.mayBorrow(endpointId, load)) {
      // Answering fast, its rows go out as fast as claims bring them: as many batches ahead as the claims need.
      const lendable = this.opts.concurrency - this.endpointConcurrency - (this.inFlight - load.sends.size);
      return Math.max(
        0,
        Math.max(batches, this.ahead) * Math.max(this.endpointConcurrency, lendable) - load.queued,
      );
    }
    return Math.max(0, batches * this.capOf(endpointId) - held);
  }

  /**
   * The room a claim reads an endpoint with: none below half its `batches` caps (refilled a few rows at a time,
   * not one per claim), any while it probes.
   */
  private claimRoom(endpointId: string, batches: number): number {
    const room = this.roomOf(endpointId, batches);
    const least = this.failing.has(endpointId) ? 1 : Math.min(this.minRoom, batches * this.capOf(endpointId));
    return room >= least ? room : 0;
  }

  /**
   * Claimed rows that can start once a slot frees: those of endpoints below their cap or that may borrow. Rows
   * behind a cap that slow or hanging sends fill do not count, or they would stop the claims of every endpoint.
   */
  private ready(): number {
    let rows = 0;
    for (const [id, load] of this.load) {
      if (load.queued === 0) continue;
      rows += this.mayBorrow(id, load)
        ? load.queued
        : Math.min(load.queued, Math.max(0, this.capOf(id) - load.sends.size));
    }
    return rows;
  }

  /** Whether the claim loop's next pass would read this endpoint. */
  private claimable(endpointId: string): boolean {
    return this.claimRoom(endpointId, 2) > 0;
  }

  /**
   * Claim up to `limit` due rows, at most `claimRoom` each endpoint; an
   * endpoint this dispatcher holds nothing of starts with room for one send
   * per batch (slow start). Claims run one at a time (the claim loop, a cron pass),
   * so each sees what the last one took.
   */
  private claim(limit: number, batches: number): Promise<deliveriesRepo.ClaimedDelivery[]> {
    const claimed = this.claiming.then(async () => {
      const room: Record<string, number> = {};
      for (const id of new Set([...this.load.keys(), ...this.failing.keys()]))
        room[id] = this.claimRoom(id, batches);
      const started = performance.now();
      const rows = await deliveriesRepo.claimDue(this.opts.nodeId, limit, this.opts.leaseMs, {
        perEndpoint: batches,
        room,
      });
      this.sized(performance.now() - started);
      for (const row of rows) {
        const load = this.load.get(row.endpoint_id) ?? {
          queued: 0,
          sends: new Map<string, number>(),
          fast: false,
          streak: 0,
        };
        load.queued += 1;
        this.load.set(row.endpoint_id, load);
      }
      return rows;
    });
    this.claiming = claimed.catch(() => undefined);
    return claimed;
  }

  /** After a claim: the send rate since the last one (smoothed), and from it and the claim's time the batches ahead. */
  private sized(claimMs: number): void {
    const now = performance.now();
    const seconds = (now - this.rateSince) / 1000;
    if (seconds > 0) this.sendsPerSec = (this.sendsPerSec + this.finishedSends / seconds) / 2;
    this.finishedSends = 0;
    this.rateSince = now;
    this.ahead = aheadBatches(this.sendsPerSec, claimMs, this.opts.concurrency, this.opts.leaseMs);
  }

  private started(row: deliveriesRepo.ClaimedDelivery): void {
    const load = this.load.get(row.endpoint_id)!;
    load.queued -= 1;
    load.sends.set(row.id, performance.now());
  }

  /**
   * A send is over (answered, failed to send, or aborted): free its place.
   * An answered attempt says whether the endpoint is failing; closing one
   * without a request (inactive endpoint) says nothing. An endpoint that
   * starts failing gives its queued rows back: behind one probe at a time
   * they could wait past their lease.
   */
  private finished(row: deliveriesRepo.ClaimedDelivery, outcome?: deliveriesRepo.AttemptResult): void {
    const load = this.load.get(row.endpoint_id);
    if (load) load.sends.delete(row.id);
    this.finishedSends += 1;
    if (outcome) countWebhookDeliveries(this.opts.metrics, outcomeOf(outcome));
    if (outcome && outcome.durationMs !== null) {
      if (load) {
        load.fast = outcome.success && outcome.durationMs < this.fastMs;
        load.streak = outcome.success ? load.streak + 1 : 0;
      }
      if (outcome.success) {
        // A recovered endpoint drains its backlog at its full cap at once, not through slow start again.
        if (this.failing.delete(row.endpoint_id) && load)
          load.streak = Math.max(load.streak, this.endpointConcurrency);
      } else this.failed(row.endpoint_id);
    }
  }

  /**
   * An endpoint answered a failure: its next probe waits half the first retry delay, doubling with each failure in
   * a row up to the longest retry delay (a circuit breaker: a failing endpoint's backlog does not take turns from
   * healthy ones). Its due rows go out oldest first, one per probe, so a retry may go out later than scheduled.
   */
  private failed(endpointId: string): void {
    const before = this.failing.get(endpointId);
    const failures = (before?.failures ?? 0) + 1;
    const gap = Math.min(this.probeGapMs * 2 ** (failures - 1), this.maxProbeGapMs);
    this.failing.set(endpointId, { failures, probeAt: performance.now() + gap });
    this.wakeAt(new Date(Date.now() + gap));
    if (!before) void this.giveBack((r) => r.endpoint_id === endpointId);
  }

  /** Take matching rows out of the queue and release their claims (nothing recorded, another claim sends them). */
  private async giveBack(which: (row: deliveriesRepo.ClaimedDelivery) => boolean): Promise<void> {
    const back = this.queue.filter(which);
    if (back.length === 0) return;
    this.queue = this.queue.filter((row) => !which(row));
    for (const row of back) this.load.get(row.endpoint_id)!.queued -= 1;
    await deliveriesRepo
      .releaseClaims(back.map((r) => ({ id: r.id, token: r.claim_token })))
      .catch((err: Error) =>
        this.opts.logger.warn(`webhook dispatcher: giving back ${back.length} claims failed: ${err.message}`),
      );
  }

  /** One pass of the claim loop: claim what the slots will want and start it; true when the claim came back full. */
  private async claimPass(): Promise<boolean> {
    // Keep `ahead` batches claimed ahead of the sends in flight (at least two: a claim takes about as long as a
    // batch of sends on a quiet database) and claim once a batch is free, so the slots never wait for a claim.
    const want = this.opts.concurrency * (this.ahead + 1) - this.inFlight - this.ready();
    if (want < this.opts.concurrency || this.stopped) return false;
    const rows = await this.claim(want, 2);
    if (this.stopped) {
      await deliveriesRepo.releaseClaims(rows.map((r) => ({ id: r.id, token: r.claim_token })));
      return false;
    }
    this.queue.push(...rows);
    this.drain();
    return rows.length === want;
  }

  /**
   * Start queued sends while slots are free: first rows of endpoints below their cap, in claim order (endpoints
   * took turns). Slots left after that no endpoint within its cap waits for: all but one cap's worth are lent to
   * endpoints that may borrow, fewest in flight first. A borrowed slot goes back when its send completes, since
   * the next drain serves endpoints below their cap first; other rows wait for their endpoint's own sends.
   */
  private drain(): void {
    for (let i = 0; i < this.queue.length && this.inFlight < this.opts.concurrency && !this.stopped;) {
      const row = this.queue[i];
      if (this.load.get(row.endpoint_id)!.sends.size < this.capOf(row.endpoint_id)) {
        this.queue.splice(i, 1);
        this.launch(row);
      } else i += 1;
    }
    while (this.inFlight < this.opts.concurrency - this.endpointConcurrency && !this.stopped) {
      let pick = -1;
      let fewest = Infinity;
      for (let i = 0; i < this.queue.length; i++) {
        const id = this.queue[i].endpoint_id;
        const load = this.load.get(id)!;
        if (load.sends.size < fewest && this.mayBorrow(id, load)) {
          pick = i;
          fewest = load.sends.size;
        }
      }
      if (pick < 0) break;
      this.launch(this.queue.splice(pick, 1)[0]);
    }
  }

  private launch(row: deliveriesRepo.ClaimedDelivery): void {
    this.inFlight += 1;
    this.started(row);
    // Unanswered after `fastMs`, the send gives its slot back and waits on its socket alone; its endpoint's cap
    // still counts it, so a slow or hanging endpoint cannot take the freed slot.
    let holdsSlot = true;
    const lapse = setTimeout(() => {
      if (this.lapsed >= this.opts.concurrency * LAPSED_PER_SLOT) return;
      holdsSlot = false;
      this.lapsed += 1;
      this.inFlight -= 1;
      this.drain();
    }, this.fastMs);
    let outcome: deliveriesRepo.AttemptResult | undefined;
    const work = attempt(this.sender, row, this.opts.retryDelaysMs, { scheduleRetries: true })
      .then(async ({ result, aborted }) => {
        if (aborted) {
          await deliveriesRepo.releaseClaims([{ id: row.id, token: row.claim_token }]).catch(() => undefined);
          return;
        }
        // The slot is free as soon as the answer is in; the result is written with the next grouped UPDATE.
        outcome = result;
        this.pending.push(result);
        this.scheduleFlush();
      })
      .catch((err: Error) =>
        this.opts.logger.warn(`webhook dispatcher: delivery ${row.id} failed: ${err.message}`),
      )
      .finally(() => {
        clearTimeout(lapse);
        if (holdsSlot) this.inFlight -= 1;
        else this.lapsed -= 1;
        this.finished(row, outcome);
        this.active.delete(work);
        this.drain();
        // Claim in batches, not one claim query per finished send: while every slot is busy, once a batch of those
        // ahead is used; with slots free (what is queued waits for its endpoint's cap), once a claim would read
        // this endpoint again (back to back while a borrowing endpoint sends faster than claims return).
        const busy = this.inFlight === this.opts.concurrency;
        if (
          busy
            ? this.queue.length <= this.opts.concurrency * (this.ahead - 1)
            : this.claimable(row.endpoint_id)
        )
          this.wake();
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
          await deliveriesRepo.recordAttempts(batch);
          for (const r of batch) if (r.nextAttemptAt) this.wakeAt(r.nextAttemptAt);
        } catch (err) {
          // The claims stay until their lease ends, then the deliveries are attempted again.
          this.opts.logger.warn(
            `webhook dispatcher: recording ${batch.length} attempts failed: ${(err as Error).message}`,
          );
        }
      }
      this.flushing = null;
    })();
  }

  private wakeAt(at: Date): void {
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        this.wake();
      },
      Math.max(0, at.getTime() - Date.now()) + 5,
    );
    timer.unref();
    this.timers.add(timer);
  }

  /** Stop claiming, abort sends in flight (their claims are given back, nothing is recorded). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.poller.stop();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await this.giveBack(() => true);
    this.sender.stop();
    await Promise.allSettled([...this.active]);
    this.scheduleFlush();
    if (this.flushing) await this.flushing;
  }
}
