import {
  addressOf,
  capApplies,
  normalizeAddress,
  quietHoursEnd,
  suppressionReason,
  type CheckInput,
} from "../../services/messages/checks";

const contact = (overrides: Partial<NonNullable<CheckInput["contact"]>> = {}) => ({
  id: "c-1",
  email: "ada@example.com",
  phone: "+15555550100",
  consent: { email: { status: "unknown" }, sms: { status: "opted_in" } },
  attributes: {},
  ...overrides,
});

const input = (overrides: Partial<CheckInput> = {}): CheckInput => ({
  channel: "email",
  address: "ada@example.com",
  transactional: false,
  topic: null,
  contact: contact(),
  dncReason: undefined,
  recentSends: 0,
  cap: null,
  ...overrides,
});

describe("suppressionReason, in the contract's order", () => {
  it("sends when nothing stands in the way", () => {
    expect(suppressionReason(input())).toBeNull();
  });

  it("invalid_address: no valid address, before everything else", () => {
    expect(suppressionReason(input({ address: null, dncReason: "manual" }))).toBe("invalid_address");
  });

  it("dnc: a do-not-contact entry, even for a transactional send", () => {
    expect(suppressionReason(input({ dncReason: "manual" }))).toBe("dnc");
    expect(suppressionReason(input({ dncReason: null, transactional: true }))).toBe("dnc");
  });

  it("bounced_before: the entry a hard bounce left", () => {
    expect(suppressionReason(input({ dncReason: "bounce" }))).toBe("bounced_before");
    expect(suppressionReason(input({ dncReason: "bounce", transactional: true }))).toBe("bounced_before");
  });

  it("unsubscribed: the channel opted out, or the topic turned off", () => {
    const optedOut = contact({ consent: { email: { status: "opted_out" } } });
    expect(suppressionReason(input({ contact: optedOut }))).toBe("unsubscribed");
    const topicOff = contact({ attributes: { topics: { news: false, deals: true } } });
    expect(suppressionReason(input({ contact: topicOff, topic: "news" }))).toBe("unsubscribed");
    expect(suppressionReason(input({ contact: topicOff, topic: "deals" }))).toBeNull();
    expect(suppressionReason(input({ contact: topicOff, topic: null }))).toBeNull();
  });

  it("unsubscribed comes before no_consent and frequency_cap", () => {
    const optedOut = contact({ consent: { sms: { status: "opted_out" } } });
    expect(
      suppressionReason(
        input({
          channel: "sms",
          address: "+15555550100",
          contact: optedOut,
          recentSends: 9,
          cap: { count: 1, periodHours: 24 },
        }),
      ),
    ).toBe("unsubscribed");
  });

  it("no_consent: sms and chatapp2 need an opt-in; email and push do not", () => {
    const unknown = contact({ consent: {} });
    expect(suppressionReason(input({ channel: "sms", address: "+15555550100", contact: unknown }))).toBe(
      "no_consent",
    );
    expect(suppressionReason(input({ channel: "chatapp2", address: "+15555550100", contact: unknown }))).toBe(
      "no_consent",
    );
    expect(suppressionReason(input({ channel: "push", address: "c-1", contact: unknown }))).toBeNull();
    expect(suppressionReason(input({ channel: "sms", address: "+15555550100" }))).toBeNull();
  });

  it("frequency_cap: at the cap on a capped channel", () => {
    const cap = { count: 2, periodHours: 24, channels: ["email"] };
    expect(suppressionReason(input({ cap, recentSends: 1 }))).toBeNull();
    expect(suppressionReason(input({ cap, recentSends: 2 }))).toBe("frequency_cap");
    expect(
      suppressionReason(input({ cap, recentSends: 5, channel: "sms", address: "+15555550100" })),
    ).toBeNull();
  });

  it("transactional skips consent, topic and cap", () => {
    const blocked = contact({
      consent: { email: { status: "opted_out" }, sms: { status: "unknown" } },
      attributes: { topics: { news: false } },
    });
    const cap = { count: 1, periodHours: 1 };
    expect(
      suppressionReason(input({ transactional: true, contact: blocked, topic: "news", cap, recentSends: 3 })),
    ).toBeNull();
    expect(
      suppressionReason(
        input({ transactional: true, channel: "sms", address: "+15555550100", contact: blocked }),
      ),
    ).toBeNull();
  });
});

describe("capApplies", () => {
  it("needs a positive count and period, and the channel when channels are named", () => {
    expect(capApplies(null, "email")).toBe(false);
    expect(capApplies({ count: 0, periodHours: 24 }, "email")).toBe(false);
    expect(capApplies({ count: 1, periodHours: 0 }, "email")).toBe(false);
    expect(capApplies({ count: 1, periodHours: 24 }, "sms")).toBe(true);
    expect(capApplies({ count: 1, periodHours: 24, channels: [] }, "sms")).toBe(true);
    expect(capApplies({ count: 1, periodHours: 24, channels: ["email"] }, "sms")).toBe(false);
  });
});

describe("addresses", () => {
  it("reads each channel's address off the contact", () => {
    const c = contact({ attributes: { chatapp1ChatId: 12345 } });
    expect(addressOf("email", c)).toBe("ada@example.com");
    expect(addressOf("sms", c)).toBe("+15555550100");
    expect(addressOf("chatapp2", c)).toBe("+15555550100");
    expect(addressOf("chatapp1", c)).toBe("12345");
    expect(addressOf("push", c)).toBe("c-1");
    expect(addressOf("chatapp1", contact())).toBeNull();
  });

  it("normalises or refuses an address", () => {
    expect(normalizeAddress("email", " Ada@Example.COM ")).toBe("ada@example.com");
    expect(normalizeAddress("email", "not an email")).toBeNull();
    expect(normalizeAddress("sms", "+1 (555) 555-0100")).toBe("+15555550100");
    expect(normalizeAddress("sms", "call me")).toBeNull();
    expect(normalizeAddress("chatapp1", "   ")).toBeNull();
  });
});

describe("quietHoursEnd", () => {
  const quiet = { start: "21:00", end: "08:00" };

  it("is null outside the window, or without one", () => {
    expect(quietHoursEnd(new Date("2026-03-02T12:00:00Z"), "UTC", quiet)).toBeNull();
    expect(quietHoursEnd(new Date("2026-03-02T23:00:00Z"), "UTC", null)).toBeNull();
    expect(
      quietHoursEnd(new Date("2026-03-02T23:00:00Z"), "UTC", { start: "08:00", end: "08:00" }),
    ).toBeNull();
    expect(
      quietHoursEnd(new Date("2026-03-02T23:00:00Z"), "UTC", { start: "25:00", end: "08:00" }),
    ).toBeNull();
  });

  it("defers to the window's end across midnight", () => {
    expect(quietHoursEnd(new Date("2026-03-02T23:30:45Z"), "UTC", quiet)?.toISOString()).toBe(
      "2026-03-03T08:00:00.000Z",
    );
    expect(quietHoursEnd(new Date("2026-03-03T07:59:00Z"), "UTC", quiet)?.toISOString()).toBe(
      "2026-03-03T08:00:00.000Z",
    );
  });

  it("starts at start and ends at end (half-open)", () => {
    expect(quietHoursEnd(new Date("2026-03-02T21:00:00Z"), "UTC", quiet)).not.toBeNull();
    expect(quietHoursEnd(new Date("2026-03-03T08:00:00Z"), "UTC", quiet)).toBeNull();
  });

  it("reads the clock in the contact's zone", () => {
    // 06:00 UTC is 22:00 the evening before in Los Angeles (PST, UTC-8): quiet until 08:00 there = 16:00 UTC.
    expect(quietHoursEnd(new Date("2026-01-15T06:00:00Z"), "America/Los_Angeles", quiet)?.toISOString()).toBe(
      "2026-01-15T16:00:00.000Z",
    );
    expect(quietHoursEnd(new Date("2026-01-15T06:00:00Z"), "Asia/Tokyo", quiet)).toBeNull();
  });

  it("handles a window inside one day, and an unknown zone as UTC", () => {
    const lunch = { start: "12:00", end: "13:30" };
    expect(quietHoursEnd(new Date("2026-03-02T12:10:00Z"), "Not/AZone", lunch)?.toISOString()).toBe(
      "2026-03-02T13:30:00.000Z",
    );
    expect(quietHoursEnd(new Date("2026-03-02T13:30:00Z"), "UTC", lunch)).toBeNull();
  });
});
