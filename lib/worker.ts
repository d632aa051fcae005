import type { LoggerInstance, MetricRegistry } from "moleculer";

/**
 * The one background runtime: every loop of every process (a queue's
 * claim-and-drain, a sweep, a schedule) is a `Poller`. It passes on `wake()`
 * (a write made work here) and every `intervalMs` (work of other replicas, a
 * lease that ran out, time passing), one drain at a time: passes follow each
 * other while one reports it may have left more, a wake during a drain runs
 * another pass after it, `stop()` waits for the pass in flight, a failed pass
 * is one warning, and each pass is counted and timed in the broker's metrics
 * (METRICS_PORT). The periodic steps it runs are registered in
 * lib/periodic-steps.ts, which the cron tick reads too.
 */

export interface PollerOptions {
  /** The loop's name in logs and metrics: its periodic step's action where it has one. */
  name: string;
  /** One pass; true when it may have left more (a full batch, work found), so another follows at once. */
  pass: () => Promise<boolean>;
  /** The fallback: a wake every this many ms. */
  intervalMs: number;
  logger: Pick<LoggerInstance, "warn">;
  /** The broker's metrics (off unless METRICS_PORT is set); none in unit tests. */
  metrics?: MetricRegistry;
  /** Drains run side by side (each pass claims its own rows): one works while another waits on the database. */
  workers?: number;
  /** 0: a wake during a drain extends it. Else the pass it asks for runs this long after the drain ends, so work made meanwhile goes together. */
  gapMs?: number;
  /** Pass at once on `start()`, not first after an interval. */
  passAtStart?: boolean;
  /** After a failed pass, wakes wait for the next interval (a failing channel is not retried on every write). */
  retryOnInterval?: boolean;
  /** Runs before each interval's wake (housekeeping that belongs to the period, not to every pass). */
  onInterval?: () => void;
  /** What a failed pass leaves behind, added to its warning. */
  failureNote?: string;
}

/** Passes of every loop, by loop and outcome (`ok`, `failed`). */
export const PASSES_METRIC = "background.passes.total";
/** How long passes take, by loop, in milliseconds. */
export const PASS_DURATION_METRIC = "background.pass.duration";

function registerMetrics(metrics: MetricRegistry): void {
  if (!metrics.isEnabled() || metrics.hasMetric(PASSES_METRIC)) return;
  metrics.register({
    name: PASSES_METRIC,
    type: "counter",
    labelNames: ["loop", "outcome"],
    description: "Passes of the background loops",
  });
  metrics.register({
    name: PASS_DURATION_METRIC,
    type: "histogram",
    labelNames: ["loop"],
    unit: "millisecond",
    description: "Duration of the background loops' passes",
    quantiles: true,
    buckets: true,
  });
}

export class Poller {
  private timer?: NodeJS.Timeout;
  /** The pass asked for during a drain, `gapMs` after it. */
  private next?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private failing = false;

  constructor(private readonly opts: PollerOptions) {
    if (opts.metrics) registerMetrics(opts.metrics);
  }

  get name(): string {
    return this.opts.name;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.failing = false;
      this.opts.onInterval?.();
      this.wake();
    }, this.opts.intervalMs);
    this.timer.unref();
    if (this.opts.passAtStart) this.wake();
  }

  /** Pass now, or once more after the drain under way. */
  wake(): void {
    if (!this.timer || this.failing) return;
    if (this.running || this.next) {
      this.again = true;
      return;
    }
    this.again = false;
    const workers = Array.from({ length: this.opts.workers ?? 1 }, () => this.drain());
    this.running = Promise.all(workers).then(() => {
      this.running = undefined;
      if (!this.again || !this.timer || this.failing) return;
      this.next = setTimeout(() => {
        this.next = undefined;
        this.wake();
      }, this.opts.gapMs ?? 0);
    });
  }

  private async drain(): Promise<void> {
    const extend = !this.opts.gapMs;
    let more: boolean;
    try {
      do {
        if (extend) this.again = false;
        more = await this.timedPass();
      } while (this.timer && (more || (extend && this.again)));
    } catch (err) {
      if (this.opts.retryOnInterval) this.failing = true;
      const note = this.opts.failureNote ? `; ${this.opts.failureNote}` : "";
      this.opts.logger.warn(`${this.opts.name}: pass failed (${(err as Error)?.message ?? err})${note}`);
    }
  }

  private async timedPass(): Promise<boolean> {
    const started = performance.now();
    const labels = { loop: this.opts.name };
    try {
      const more = await this.opts.pass();
      this.opts.metrics?.increment(PASSES_METRIC, { ...labels, outcome: "ok" });
      return more;
    } catch (err) {
      this.opts.metrics?.increment(PASSES_METRIC, { ...labels, outcome: "failed" });
      throw err;
    } finally {
      this.opts.metrics?.observe(PASS_DURATION_METRIC, performance.now() - started, labels);
    }
  }

  /** No more passes; the one in flight finishes first. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.next);
    this.timer = undefined;
    this.next = undefined;
    await this.running;
  }
}
