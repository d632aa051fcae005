import { Semaphore } from "../../lib/semaphore";

/** A task that stays open until released, noting how many ran at once. */
function gate() {
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  return { opened, release };
}

test("never more than max at once, in arrival order, and every result and failure reaches its caller", async () => {
  const limit = new Semaphore(3);
  let now = 0;
  let peak = 0;
  const started: number[] = [];
  const gates = Array.from({ length: 10 }, gate);
  const runs = gates.map((g, i) =>
    limit.run(async () => {
      started.push(i);
      now++;
      peak = Math.max(peak, now);
      await g.opened;
      now--;
      if (i === 4) throw new Error("task 4 failed");
      return i * 10;
    }),
  );
  const outcomes = Promise.allSettled(runs);
  await Promise.resolve();
  expect(started).toEqual([0, 1, 2]);
  expect(limit.running).toBe(3);
  // Release in an odd order: each freed place goes to the next in line.
  for (const i of [1, 0, 2, 5, 3, 4, 6, 7, 8, 9]) {
    gates[i].release();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const settled = await outcomes;
  expect(peak).toBe(3);
  expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  expect(settled.map((s) => (s.status === "fulfilled" ? s.value : (s.reason as Error).message))).toEqual([
    0,
    10,
    20,
    30,
    "task 4 failed",
    50,
    60,
    70,
    80,
    90,
  ]);
  expect(limit.running).toBe(0);
});

test("a newcomer arriving as a place frees waits behind those already waiting", async () => {
  const limit = new Semaphore(1);
  const first = gate();
  const order: string[] = [];
  const a = limit.run(async () => {
    order.push("a");
    await first.opened;
  });
  const b = limit.run(async () => {
    order.push("b");
  });
  first.release();
  const c = limit.run(async () => {
    order.push("c");
  });
  await Promise.all([a, b, c]);
  expect(order).toEqual(["a", "b", "c"]);
});

test("max must be a positive integer", () => {
  expect(() => new Semaphore(0)).toThrow(RangeError);
  expect(() => new Semaphore(1.5)).toThrow(RangeError);
});
