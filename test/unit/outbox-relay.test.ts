import { retryDelayMs } from "../../lib/outbox";

describe("retryDelayMs", () => {
  it("doubles from the poll interval per failed attempt, up to five minutes", () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 1000))).toEqual([1000, 2000, 4000, 8000]);
    expect(retryDelayMs(9, 1000)).toBe(256_000);
    expect(retryDelayMs(10, 1000)).toBe(300_000);
    expect(retryDelayMs(60, 1000)).toBe(300_000);
  });
});
