const wsId = { type: "string", min: 1, max: 64 } as const;
const optionalText = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;

/** The optional fields an event carries besides its type (spec 2, Event). */
const eventFields = {
  contactId: { type: "string", min: 1, max: 64, optional: true, nullable: true },
  metadata: { type: "object", optional: true, nullable: true },
  sessionId: optionalText(200),
  pageUrl: optionalText(2048),
  referrer: optionalText(2048),
  utmSource: optionalText(200),
  utmMedium: optionalText(200),
  utmCampaign: optionalText(200),
} as const;

export const schemas = {
  create: {
    $$strict: "remove",
    workspaceId: wsId,
    type: { type: "string", min: 1, max: 200, trim: true },
    ...eventFields,
  },
  list: {
    $$strict: "remove",
    workspaceId: wsId,
    contactId: { type: "string", min: 1, max: 64, optional: true },
    type: { type: "string", min: 1, max: 200, optional: true },
    limit: { type: "number", integer: true, positive: true, convert: true, optional: true },
  },
  /** Internal entry of every origin; `timestamp` lets forms, tracking and channel inbound keep their own time. */
  record: {
    $$strict: "remove",
    type: { type: "string", min: 1, max: 200, trim: true },
    ...eventFields,
    timestamp: { type: "date", convert: true, optional: true },
  },
  listForContact: {
    $$strict: "remove",
    contactId: { type: "string", min: 1, max: 64 },
    limit: { type: "number", integer: true, positive: true, convert: true, optional: true },
  },
} as const;

/** What `events.record` takes. */
export interface RecordInput {
  type: string;
  contactId?: string | null;
  metadata?: Record<string, unknown> | null;
  sessionId?: string | null;
  pageUrl?: string | null;
  referrer?: string | null;
  utmSource?: string | null;
  utmMedium?: string | null;
  utmCampaign?: string | null;
  timestamp?: Date;
}

/** The contract's event object (`POST {ws}/events` answer). */
export interface EventRecord {
  id: string;
  type: string;
  metadata: Record<string, unknown>;
  timestamp: string;
  contactId: string | null;
  sessionId: string | null;
  pageUrl: string | null;
  referrer: string | null;
  utmSource: string | null;
  utmMedium: string | null;
  utmCampaign: string | null;
}

export interface ContactSummary {
  id: string;
  email: string | null;
  firstName: string | null;
  lastName: string | null;
}

/** A list item: the event with its contact's summary (null when the event has no contact). */
export type EventListItem = EventRecord & { contact: ContactSummary | null };

/** Events list limit (spec 8): default 50, larger values clamped to 200. */
export const EVENTS_LIMIT = { default: 50, max: 200 } as const;

export function clampEventsLimit(limit: number | undefined): number {
  return Math.min(EVENTS_LIMIT.max, Math.max(1, Math.floor(limit ?? EVENTS_LIMIT.default)));
}
