import { retentionPolicy, RetentionSetting } from "../../lib/retention";
import { compileParamsChecker } from "../../lib/schema";
import { cutoffsOf } from "../../services/retention/purge";

const NOW = new Date("2026-03-29T12:00:00.000Z");

test("each kind's cutoff is now minus its days; a kept kind has none", () => {
  expect(cutoffsOf({ events: 30, messages: 1, formSubmissions: null, webhookDeliveries: 3650 }, NOW)).toEqual(
    {
      events: new Date("2026-02-27T12:00:00.000Z"),
      messages: new Date("2026-03-28T12:00:00.000Z"),
      formSubmissions: null,
      // Days are 24 hours, whatever a zone's clocks do (the 2026-03-29 change in Europe is not a shorter day here).
      webhookDeliveries: new Date(NOW.getTime() - 3650 * 24 * 60 * 60 * 1000),
    },
  );
});

test("a policy names every kind: left out or missing is kept (null)", () => {
  expect(retentionPolicy({ events: 7 })).toEqual({
    events: 7,
    messages: null,
    formSubmissions: null,
    webhookDeliveries: null,
  });
  expect(retentionPolicy(null)).toEqual({
    events: null,
    messages: null,
    formSubmissions: null,
    webhookDeliveries: null,
  });
});

test("settings.retention: days 1-3650 or null, and no other key", () => {
  const check = compileParamsChecker(RetentionSetting);
  expect(check({ events: 1, messages: 3650, formSubmissions: null }, true)).toBe(true);
  expect(check({}, true)).toBe(true);
  for (const [value, field] of [
    [{ events: 0 }, "events"],
    [{ messages: 3651 }, "messages"],
    [{ formSubmissions: 2.5 }, "formSubmissions"],
    [{ webhookDeliveries: -1 }, "webhookDeliveries"],
    [{ contacts: 30 }, "contacts"],
  ] as const) {
    const issues = check({ ...value }, true);
    expect(issues).not.toBe(true);
    expect((issues as Array<{ field: string }>).map((i) => i.field)).toContain(field);
  }
});
