import { clampEventsLimit } from "../../services/events/events.schemas";
import { chainRetryDelay } from "../../services/events/chain";

test("events list limit: default 50, clamped to 1..200", () => {
  expect(clampEventsLimit(undefined)).toBe(50);
  expect(clampEventsLimit(7)).toBe(7);
  expect(clampEventsLimit(200)).toBe(200);
  expect(clampEventsLimit(201)).toBe(200);
  expect(clampEventsLimit(0)).toBe(1);
});

test("a chain's retries wait the configured delays in turn, then the last one for good", () => {
  const delays = [100, 1000, 60_000];
  expect([0, 1, 2, 3, 10].map((attempts) => chainRetryDelay(attempts, delays))).toEqual([
    100, 1000, 60_000, 60_000, 60_000,
  ]);
  expect(chainRetryDelay(3, [])).toBe(0);
});
