import { clampEventsLimit } from "../../services/events/events.schemas";

test("events list limit: default 50, clamped to 1..200", () => {
  expect(clampEventsLimit(undefined)).toBe(50);
  expect(clampEventsLimit(7)).toBe(7);
  expect(clampEventsLimit(200)).toBe(200);
  expect(clampEventsLimit(201)).toBe(200);
  expect(clampEventsLimit(0)).toBe(1);
});
