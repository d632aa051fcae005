import { ChannelWatch, envelopeBounds, retryDelayMs } from "../../lib/outbox";

describe("retryDelayMs", () => {
  it("doubles from the poll interval per failed attempt, up to five minutes", () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 1000))).toEqual([1000, 2000, 4000, 8000]);
    expect(retryDelayMs(9, 1000)).toBe(256_000);
    expect(retryDelayMs(10, 1000)).toBe(300_000);
    expect(retryDelayMs(60, 1000)).toBe(300_000);
  });
});

describe("ChannelWatch", () => {
  it("sees the channel back on the first pass that sends a fact after a pass whose every send failed", () => {
    const watch = new ChannelWatch();
    expect(watch.recovered(5, 0)).toBe(false);
    expect(watch.recovered(3, 3)).toBe(false);
    expect(watch.recovered(0, 0)).toBe(false);
    expect(watch.recovered(2, 2)).toBe(false);
    expect(watch.recovered(4, 1)).toBe(true);
    expect(watch.recovered(4, 0)).toBe(false);
  });

  it("a pass with some sends failed is no outage, and an idle pass says nothing", () => {
    const watch = new ChannelWatch();
    expect(watch.recovered(4, 3)).toBe(false);
    expect(watch.recovered(1, 0)).toBe(false);
    expect(watch.recovered(1, 1)).toBe(false);
    expect(watch.recovered(0, 0)).toBe(false);
    expect(watch.recovered(1, 0)).toBe(true);
  });
});

describe("envelopeBounds", () => {
  it("fills each envelope up to the bound, in order, frames and commas counted", () => {
    // 16 bytes of frame, each fact its size and a comma.
    expect(envelopeBounds([100, 100, 100, 100, 100], 16 + 303)).toEqual([
      [0, 3],
      [3, 5],
    ]);
    expect(envelopeBounds([100, 100, 100], 16 + 302)).toEqual([
      [0, 2],
      [2, 3],
    ]);
    expect(
      envelopeBounds(
        Array.from({ length: 500 }, () => 200),
        256 * 1024,
      ),
    ).toEqual([[0, 500]]);
    expect(envelopeBounds([], 1000)).toEqual([]);
  });

  it("gives a fact larger than the bound an envelope of its own", () => {
    expect(envelopeBounds([10, 5000, 10, 10], 1000)).toEqual([
      [0, 1],
      [1, 2],
      [2, 4],
    ]);
  });
});
