import { ServiceBroker } from "moleculer";
import { PASS_DURATION_METRIC, PASSES_METRIC, Poller, type PollerOptions } from "../../lib/worker";

/** A pass the test finishes by hand. */
function deferred() {
  let resolve!: (more: boolean) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<boolean>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const flush = () => jest.advanceTimersByTimeAsync(0);

/** The outbox relay's settings (lib/outbox.ts): pass at start, 5 ms gap, failures retried by the poll. */
const relayLike = (pass: PollerOptions["pass"], warn = jest.fn()): Poller =>
  new Poller({
    name: "outbox.relay",
    pass,
    intervalMs: 1000,
    gapMs: 5,
    passAtStart: true,
    retryOnInterval: true,
    logger: { warn },
  });

describe("Poller", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("passes at once when started, again while passes may have left more, then only when woken or polled", async () => {
    const more = [true, true, false, false, false];
    const pass = jest.fn(async () => more.shift() ?? false);
    const poller = relayLike(pass);
    poller.start();
    await flush();
    expect(pass).toHaveBeenCalledTimes(3);
    poller.wake();
    await flush();
    expect(pass).toHaveBeenCalledTimes(4);
    await jest.advanceTimersByTimeAsync(1000);
    expect(pass).toHaveBeenCalledTimes(5);
    await poller.stop();
  });

  it("runs one pass at a time: wakes during a pass run exactly one more, gapMs after it; an idle wake runs at once", async () => {
    const passes = [deferred(), deferred(), deferred()];
    let calls = 0;
    const poller = relayLike(() => passes[calls++].promise);
    poller.start();
    poller.wake();
    poller.wake();
    poller.wake();
    await flush();
    expect(calls).toBe(1);
    passes[0].resolve(false);
    await jest.advanceTimersByTimeAsync(4);
    expect(calls).toBe(1);
    poller.wake();
    await jest.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    passes[1].resolve(false);
    await jest.advanceTimersByTimeAsync(50);
    expect(calls).toBe(2);
    poller.wake();
    await flush();
    expect(calls).toBe(3);
    passes[2].resolve(false);
    await poller.stop();
  });

  it("without a gap, a wake during a pass extends the drain; the first pass waits for the interval", async () => {
    const first = deferred();
    const pass = jest.fn().mockReturnValueOnce(first.promise).mockResolvedValue(false);
    const poller = new Poller({ name: "queue", pass, intervalMs: 1000, logger: { warn: jest.fn() } });
    poller.start();
    await flush();
    expect(pass).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1000);
    expect(pass).toHaveBeenCalledTimes(1);
    poller.wake();
    first.resolve(false);
    await flush();
    expect(pass).toHaveBeenCalledTimes(2);
    await poller.stop();
  });

  it("runs `workers` drains side by side", async () => {
    const passes = [deferred(), deferred()];
    let calls = 0;
    const poller = new Poller({
      name: "queue",
      pass: () => passes[calls++].promise,
      intervalMs: 1000,
      workers: 2,
      passAtStart: true,
      logger: { warn: jest.fn() },
    });
    poller.start();
    await flush();
    expect(calls).toBe(2);
    passes.forEach((p) => p.resolve(false));
    await poller.stop();
  });

  it("logs one line per failed pass; with retryOnInterval, leaves the retry to the poll instead of every wake", async () => {
    const warn = jest.fn();
    const pass = jest.fn().mockRejectedValueOnce(new Error("channel down")).mockResolvedValue(false);
    const poller = relayLike(pass, warn);
    poller.start();
    await flush();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining("outbox.relay: pass failed (channel down)"));
    poller.wake();
    await flush();
    expect(pass).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(1000);
    expect(pass).toHaveBeenCalledTimes(2);
    poller.wake();
    await flush();
    expect(pass).toHaveBeenCalledTimes(3);
    await poller.stop();
  });

  it("stop finishes the pass in flight, starts no other, and polls no more", async () => {
    const first = deferred();
    const pass = jest.fn().mockReturnValueOnce(first.promise).mockResolvedValue(true);
    const poller = relayLike(pass);
    poller.start();
    poller.wake();
    let stopped = false;
    const stopping = poller.stop().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false);
    first.resolve(true);
    await stopping;
    poller.wake();
    await jest.advanceTimersByTimeAsync(5000);
    expect(pass).toHaveBeenCalledTimes(1);
  });

  it("runs its hook before each interval's pass", async () => {
    const order: string[] = [];
    const poller = new Poller({
      name: "queue",
      pass: async () => {
        order.push("pass");
        return false;
      },
      onInterval: () => order.push("interval"),
      intervalMs: 1000,
      logger: { warn: jest.fn() },
    });
    poller.start();
    await jest.advanceTimersByTimeAsync(2000);
    expect(order).toEqual(["interval", "pass", "interval", "pass"]);
    await poller.stop();
  });
});

describe("Poller metrics", () => {
  it("counts passes by loop and outcome and times them", async () => {
    const broker = new ServiceBroker({ logger: false, transporter: null, metrics: { enabled: true } });
    const pass = jest.fn().mockResolvedValueOnce(false).mockRejectedValueOnce(new Error("down"));
    const poller = new Poller({
      name: "queue",
      pass,
      intervalMs: 60_000,
      passAtStart: true,
      logger: { warn: jest.fn() },
      metrics: broker.metrics,
    });
    poller.start();
    await poller.stop();
    poller.start();
    await poller.stop();
    const passes = broker.metrics.getMetric(PASSES_METRIC)!;
    expect(passes.get({ loop: "queue", outcome: "ok" })?.value).toBe(1);
    expect(passes.get({ loop: "queue", outcome: "failed" })?.value).toBe(1);
    const duration = broker.metrics.getMetric(PASS_DURATION_METRIC)!.get({ loop: "queue" }) as {
      count: number;
    };
    expect(duration.count).toBe(2);
    // A second loop of the broker shares the metrics.
    expect(
      () => new Poller({ name: "other", pass, intervalMs: 1000, logger: console, metrics: broker.metrics }),
    ).not.toThrow();
  });
});
