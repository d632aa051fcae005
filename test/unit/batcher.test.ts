import { MicroBatcher } from "../../lib/batcher";

describe("MicroBatcher", () => {
  it("runs an idle item at once and groups items that arrive while lanes are busy", async () => {
    const batches: number[][] = [];
    const batcher = new MicroBatcher(
      async (items: number[]) => {
        batches.push(items);
        await new Promise((r) => setTimeout(r, 5));
        return items.map((n) => n * 2);
      },
      { maxBatch: 3, lanes: 1 },
    );
    const out = await Promise.all([1, 2, 3, 4, 5].map((n) => batcher.add(n)));
    expect(out).toEqual([2, 4, 6, 8, 10]);
    expect(batches).toEqual([[1], [2, 3, 4], [5]]);
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
