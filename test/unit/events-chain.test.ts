import { activityPayload } from "../../services/events/chain";
import { clampEventsLimit } from "../../services/events/events.schemas";

test("events list limit: default 50, clamped to 1..200", () => {
  expect(clampEventsLimit(undefined)).toBe(50);
  expect(clampEventsLimit(7)).toBe(7);
  expect(clampEventsLimit(200)).toBe(200);
  expect(clampEventsLimit(201)).toBe(200);
  expect(clampEventsLimit(0)).toBe(1);
});

test("an activity event's webhook payload carries the event id and every recorded field", () => {
  const event = {
    id: "e1",
    type: "purchase",
    metadata: { amount: 3 },
    timestamp: "2026-01-01T00:00:00.000Z",
    contactId: "c1",
    sessionId: "s",
    pageUrl: "p",
    referrer: "r",
    utmSource: "us",
    utmMedium: "um",
    utmCampaign: "uc",
  };
  expect(activityPayload(event)).toEqual({
    eventId: "e1",
    contactId: "c1",
    type: "purchase",
    metadata: { amount: 3 },
    timestamp: "2026-01-01T00:00:00.000Z",
    sessionId: "s",
    pageUrl: "p",
    referrer: "r",
    utmSource: "us",
    utmMedium: "um",
    utmCampaign: "uc",
  });
});
