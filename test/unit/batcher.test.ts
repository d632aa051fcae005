import { MicroBatcher } from "../../lib/batcher";

describe("MicroBatcher", () => {
  it("groups the items of one burst, and those that arrive while lanes are busy", async () => {
    const batches: number[][] = [];
    // The first batch holds its lane until the later items have arrived.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const batcher = new MicroBatcher(
      async (items: number[]) => {
        batches.push(items);
        await released;
        return items.map((n) => n * 2);
      },
      { maxBatch: 3, lanes: 1 },
    );
    const burst = Promise.all([1, 2].map((n) => batcher.add(n)));
    await new Promise((r) => setImmediate(r));
    // The lane is busy with [1, 2]: these wait and go in batches of at most 3.
    const later = Promise.all([3, 4, 5, 6].map((n) => batcher.add(n)));
    release();
    expect(await burst).toEqual([2, 4]);
    expect(await later).toEqual([6, 8, 10, 12]);
    expect(batches).toEqual([[1, 2], [3, 4, 5], [6]]);
  });

  it("runs a lone item at the end of the turn it was added in, waiting for no timer", async () => {
    const runs: number[][] = [];
    const batcher = new MicroBatcher(
      async (items: number[]) => {
        runs.push(items);
        return items;
      },
      { maxBatch: 10, lanes: 1 },
    );
    const out = batcher.add(7);
    expect(runs).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(runs).toEqual([[7]]);
    expect(await out).toBe(7);
  });

  it("fails only the bad item of a failed batch", async () => {
    const batcher = new MicroBatcher(
      async (items: number[]) => {
        if (items.includes(3)) throw new Error("bad 3");
        return items;
      },
      { maxBatch: 10, lanes: 1 },
    );
    const results = await Promise.allSettled([1, 2, 3, 4].map((n) => batcher.add(n)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect((results[2] as PromiseRejectedResult).reason.message).toBe("bad 3");
  });
});
