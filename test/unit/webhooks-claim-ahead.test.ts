import { aheadBatches, MAX_AHEAD_BATCHES } from "../../services/webhooks/dispatcher";

/** How far the dispatcher claims ahead of its sends: sends/s, claim ms, concurrency, lease ms. */
describe("webhook dispatcher: batches claimed ahead", () => {
  test("two batches while claims are quick beside the sends (a quiet database)", () => {
    expect(aheadBatches(6000, 5, 50, 30_000)).toBe(2);
    expect(aheadBatches(0, 200, 50, 30_000)).toBe(2);
  });

  test("what the sends use up in two claims' time when claims are slow", () => {
    // 1,000 sends/s and a 150 ms claim: 300 rows, 6 batches of 50.
    expect(aheadBatches(1000, 150, 50, 30_000)).toBe(6);
    expect(aheadBatches(1000, 151, 50, 30_000)).toBe(7);
  });

  test("never more than the cap, nor than the sends get through in a quarter of the lease", () => {
    expect(aheadBatches(20_000, 500, 50, 30_000)).toBe(MAX_AHEAD_BATCHES);
    // 100 sends/s and a 2 s claim would want 8 batches; a 10 s lease leaves room for 250 rows, 5 batches.
    expect(aheadBatches(100, 2000, 50, 10_000)).toBe(5);
    expect(aheadBatches(100, 2000, 50, 1000)).toBe(2);
  });
});
