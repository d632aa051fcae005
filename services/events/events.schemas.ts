import { Type, type Static } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import { Component, DateTime, Int32, Nullable, Params, Trimmed } from "../../lib/schema";

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Text = (maxLength: number) => Type.Optional(Nullable(Type.String({ maxLength })));
const EventType = Trimmed({
  minLength: 1,
  maxLength: 200,
  description: "Event type identifier, e.g. `purchase`",
});
const Metadata = Type.Record(Type.String(), Type.Unknown(), { description: "Arbitrary payload" });

/** An internal caller's own id for the event (an inbound message's): stored once, however often it is recorded. */
const OwnEventId = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: 64,
    description:
      "The caller's id for the event: recording it again answers the stored event and runs its chain no more",
  }),
);

/** The optional fields an event carries besides its type (spec 2, Event). */
const eventFields = {
  contactId: Type.Optional(Nullable(Id)),
  metadata: Type.Optional(Nullable(Metadata)),
  sessionId: Text(200),
  pageUrl: Text(2048),
  referrer: Text(2048),
  utmSource: Text(200),
  utmMedium: Text(200),
  utmCampaign: Text(200),
};

/** The contract's event object (`POST {ws}/events` answer). */
export const EventSchema = Component(
  "Event",
  Type.Object({
    id: Type.String(),
    type: Type.String(),
    metadata: Metadata,
    timestamp: Type.String({ format: "date-time" }),
    contactId: Nullable(Type.String()),
    sessionId: Nullable(Type.String()),
    pageUrl: Nullable(Type.String()),
    referrer: Nullable(Type.String()),
    utmSource: Nullable(Type.String()),
    utmMedium: Nullable(Type.String()),
    utmCampaign: Nullable(Type.String()),
  }),
);
export type EventRecord = Static<typeof EventSchema>;

export const ContactSummarySchema = Component(
  "ContactSummary",
  Type.Object({
    id: Type.String(),
    email: Nullable(Type.String()),
    firstName: Nullable(Type.String()),
    lastName: Nullable(Type.String()),
  }),
);
export type ContactSummary = Static<typeof ContactSummarySchema>;

/** A list item: the event with its contact's summary (null when the event has no contact). */
export const EventListItemSchema = Component(
  "EventListItem",
  Type.Intersect([EventSchema, Type.Object({ contact: Nullable(ContactSummarySchema) })]),
);
export type EventListItem = Static<typeof EventListItemSchema>;

/** An item of the workspace's activity feed (contract-messaging 15): a recorded event with its contact. */
export const ActivityItemSchema = Component(
  "ActivityItem",
  Type.Object({
    id: Type.String(),
    type: Type.String(),
    contactId: Nullable(Type.String()),
    contact: Nullable(ContactSummarySchema),
    metadata: Metadata,
    occurredAt: DateTime(),
  }),
);
export type ActivityItem = Static<typeof ActivityItemSchema>;

/** A time bound of the feed: a date (midnight UTC) or a date-time. */
const Moment = Type.Optional(
  Type.Union([Type.String({ format: "date-time" }), Type.String({ format: "date" })]),
);

/** Events list limit (spec 8): default 50, larger values clamped to 200. */
export const EVENTS_LIMIT = { default: 50, max: 200 } as const;
const Limit = Type.Optional(
  Int32({
    minimum: 1,
    description: `Default ${EVENTS_LIMIT.default}; larger than ${EVENTS_LIMIT.max} is clamped`,
  }),
);

export const schemas = {
  create: Params({
    workspaceId: Id,
    type: EventType,
    ...eventFields,
    timestamp: Type.Optional(
      Type.String({
        format: "date-time",
        description:
          "When it happened (backfill of history); default now. At most 5 minutes ahead of the server's clock",
      }),
    ),
  }),
  list: Params({
    workspaceId: Id,
    contactId: Type.Optional(Id),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Limit,
  }),
  /** Internal entry of every origin; `timestamp` lets forms, tracking and channel inbound keep their own time. */
  record: Params({
    id: OwnEventId,
    type: EventType,
    ...eventFields,
    timestamp: Type.Optional(Type.String({ format: "date-time" })),
    fact: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          "The outbound webhook's `data` for this event in place of the activity shape (contract 8: `form.submitted` gives exactly one delivery, `{formId, submissionId, fields}`)",
      }),
    ),
  }),
  recordBatch: Params({
    events: Type.Array(
      Type.Object({
        id: OwnEventId,
        type: EventType,
        ...eventFields,
        timestamp: Type.Optional(Type.String({ format: "date-time" })),
      }),
      { minItems: 1, maxItems: 200 },
    ),
  }),
  activity: Params({
    workspaceId: Id,
    ...PageQuery,
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    contactId: Type.Optional(Id),
    from: Moment,
    to: Moment,
  }),
  activityResult: Paginated(ActivityItemSchema),
  listForContact: Params({ contactId: Id, limit: Limit }),
  claimSession: Params({ sessionId: Type.String({ minLength: 1, maxLength: 200 }), contactId: Id }),
  createResult: EventSchema,
  listResult: Type.Array(EventListItemSchema),
};

/** What `events.record` takes. */
export type RecordInput = Static<typeof schemas.record>;

export function clampEventsLimit(limit: number | undefined): number {
  return Math.min(EVENTS_LIMIT.max, Math.max(1, Math.floor(limit ?? EVENTS_LIMIT.default)));
}
