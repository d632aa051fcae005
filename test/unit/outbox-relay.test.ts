import { OutboxRelay, retryDelayMs } from "../../lib/outbox";

/** A pass the test finishes by hand. */
function deferred() {
  let resolve!: (sent: number) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<number>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const flush = () => jest.advanceTimersByTimeAsync(0);

describe("OutboxRelay", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("passes at once when started, again while passes come back full, then only when woken or polled", async () => {
    const sent = [500, 500, 3, 0, 0];
    const pass = jest.fn(async () => sent.shift() ?? 0);
    const relay = new OutboxRelay({ pass, batch: 500, gapMs: 5, pollMs: 1000, onError: jest.fn() });
    relay.start();
    await flush();
    expect(pass).toHaveBeenCalledTimes(3);
    relay.wake();
    await flush();
    expect(pass).toHaveBeenCalledTimes(4);
    await jest.advanceTimersByTimeAsync(1000);
    expect(pass).toHaveBeenCalledTimes(5);
    await relay.stop();
  });

  it("runs one pass at a time: wakes during a pass run exactly one more, gapMs after it; an idle wake runs at once", async () => {
    const passes = [deferred(), deferred(), deferred()];
    let calls = 0;
    const relay = new OutboxRelay({
      pass: () => passes[calls++].promise,
      batch: 500,
      gapMs: 5,
      pollMs: 1000,
      onError: jest.fn(),
    });
    relay.start();
    relay.wake();
    relay.wake();
    relay.wake();
    await flush();
    expect(calls).toBe(1);
    passes[0].resolve(1);
    await jest.advanceTimersByTimeAsync(4);
    expect(calls).toBe(1);
    relay.wake();
    await jest.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    passes[1].resolve(0);
    await jest.advanceTimersByTimeAsync(50);
    expect(calls).toBe(2);
    relay.wake();
    await flush();
    expect(calls).toBe(3);
    passes[2].resolve(0);
    await relay.stop();
  });

  it("after a failed pass, leaves the retry to the poll instead of every wake", async () => {
    const onError = jest.fn();
    const pass = jest.fn().mockRejectedValueOnce(new Error("channel down")).mockResolvedValue(0);
    const relay = new OutboxRelay({ pass, batch: 500, gapMs: 5, pollMs: 1000, onError });
    relay.start();
    await flush();
    expect(onError).toHaveBeenCalledWith(expect.objectContaining({ message: "channel down" }));
    relay.wake();
    await flush();
    expect(pass).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(1000);
    expect(pass).toHaveBeenCalledTimes(2);
    relay.wake();
    await flush();
    expect(pass).toHaveBeenCalledTimes(3);
    await relay.stop();
  });

  it("stop finishes the pass in flight, starts no other, and polls no more", async () => {
    const first = deferred();
    const pass = jest.fn().mockReturnValueOnce(first.promise).mockResolvedValue(500);
    const relay = new OutboxRelay({ pass, batch: 500, gapMs: 5, pollMs: 1000, onError: jest.fn() });
    relay.start();
    relay.wake();
    let stopped = false;
    const stopping = relay.stop().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false);
    first.resolve(500);
    await stopping;
    relay.wake();
    await jest.advanceTimersByTimeAsync(5000);
    expect(pass).toHaveBeenCalledTimes(1);
  });
});

describe("retryDelayMs", () => {
  it("doubles from the poll interval per failed attempt, up to five minutes", () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 1000))).toEqual([1000, 2000, 4000, 8000]);
    expect(retryDelayMs(9, 1000)).toBe(256_000);
    expect(retryDelayMs(10, 1000)).toBe(300_000);
    expect(retryDelayMs(60, 1000)).toBe(300_000);
  });
});
