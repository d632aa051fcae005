import { Type, type Static } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import {
  Component,
  DateTime,
  Int32,
  Nullable,
  Params,
  StringEnum,
  Trimmed,
  WorkspaceIdParam,
} from "../../lib/schema";
import { CHANNELS } from "../../lib/channels";
import { SUPPRESSION_REASONS } from "./checks";

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Channel = StringEnum(CHANNELS);
export const MESSAGE_STATUSES = [
  "queued",
  "sending",
  "sent",
  "delivered",
  "opened",
  "clicked",
  "failed",
  "bounced",
  "complained",
  "suppressed",
] as const;
const Status = StringEnum(MESSAGE_STATUSES);

export const MessageSchema = Component(
  "Message",
  Type.Object({
    id: Type.String(),
    channel: Channel,
    status: Status,
    reason: Nullable(
      Type.String({
        description: `Suppressed: ${SUPPRESSION_REASONS.join(", ")}; bounced: hard_bounce, soft_bounce`,
      }),
    ),
    contactId: Nullable(Type.String()),
    to: Type.String(),
    templateId: Nullable(Type.String()),
    variant: Nullable(Type.String()),
    locale: Nullable(Type.String()),
    campaignId: Nullable(Type.String()),
    enrollmentId: Nullable(Type.String()),
    topic: Nullable(Type.String()),
    transactional: Type.Boolean(),
    providerId: Nullable(Type.String()),
    providerType: Nullable(Type.String({ description: "`log` when no provider is configured" })),
    providerMessageId: Nullable(Type.String()),
    segments: Nullable(Type.Integer({ description: "SMS: the parts the provider sent, as it reports them" })),
    sendAt: DateTime(),
    sentAt: Nullable(DateTime()),
    deliveredAt: Nullable(DateTime()),
    openedAt: Nullable(DateTime()),
    clickedAt: Nullable(DateTime()),
    opens: Type.Integer(),
    clicks: Type.Integer(),
    error: Nullable(Type.String()),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type MessageView = Static<typeof MessageSchema>;

/** A push message's outcome at one of its contact's subscriptions, per attempt. */
export const PushDeliverySchema = Component(
  "PushDelivery",
  Type.Object({
    subscriptionId: Type.String(),
    type: StringEnum(["web", "pushgw1", "pushgw2"]),
    attempt: Type.Integer(),
    providerType: Nullable(Type.String()),
    status: StringEnum(["accepted", "gone", "failed", "skipped"], {
      description: "`gone` deactivated the subscription; `skipped`: its provider type is not configured",
    }),
    code: Nullable(Type.String({ description: "The push service's status or error code" })),
    providerMessageId: Nullable(Type.String()),
    at: DateTime(),
  }),
);
export type PushDeliveryView = Static<typeof PushDeliverySchema>;

export const MessageDetailSchema = Component(
  "MessageDetail",
  Type.Intersect([
    MessageSchema,
    Type.Object({
      content: Nullable(
        Type.Record(Type.String(), Type.Unknown(), { description: "What was sent (rendered)" }),
      ),
      history: Type.Array(
        Type.Object({ status: Type.String(), at: DateTime(), reason: Nullable(Type.String()) }),
      ),
      deliveries: Type.Optional(
        Type.Array(PushDeliverySchema, {
          description: "Push: the outcome at each subscription, per attempt",
        }),
      ),
    }),
  ]),
);
export type MessageDetail = Static<typeof MessageDetailSchema>;

export const ShortLinkSchema = Component(
  "ShortLink",
  Type.Object({
    id: Type.String({ description: "The code" }),
    code: Type.String({ description: "8 base62 characters" }),
    url: Type.String(),
    templateId: Nullable(Type.String()),
    campaignId: Nullable(Type.String()),
    clicks: Type.Integer(),
    uniqueClicks: Type.Integer({
      description: "Messages that clicked it at least once (machine clicks left out)",
    }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type ShortLinkView = Static<typeof ShortLinkSchema>;

/** What a test send answers, per address (templates' send-test hands it on). */
export const SendTestResultSchema = Type.Object({
  results: Type.Array(
    Type.Object({
      to: Type.String(),
      status: StringEnum(["sent", "failed"]),
      error: Nullable(Type.String()),
    }),
  ),
});
export type SendTestResult = Static<typeof SendTestResultSchema>;

/** What one send made at once (`sendNow`, an item of `sendNowBatch`) takes. */
const sendNowFields = {
  contactId: Id,
  to: Type.Optional(Trimmed({ minLength: 1, maxLength: 254 })),
  channel: Channel,
  content: Type.Record(Type.String(), Type.Unknown()),
  transactional: Type.Optional(Type.Boolean({ default: false })),
  providerId: Type.Optional(Id),
  headers: Type.Optional(
    Type.Record(Type.String({ pattern: "^[A-Za-z][A-Za-z0-9-]{0,63}$" }), Type.String({ maxLength: 8000 }), {
      maxProperties: 10,
      description: "Email headers of this send (a reply's In-Reply-To and References)",
    }),
  ),
};

/** How many sends one `sendNowBatch` takes. */
export const SEND_NOW_BATCH = 100;

export const schemas = {
  create: Params({
    workspaceId: WorkspaceIdParam,
    contactId: Type.Optional(Id),
    to: Type.Optional(
      Trimmed({ minLength: 1, maxLength: 254, description: "Wins over the contact's address" }),
    ),
    channel: Channel,
    templateId: Type.Optional(Id),
    content: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: "Inline content of the channel (as a template's)",
      }),
    ),
    locale: Type.Optional(Type.String({ minLength: 2, maxLength: 35 })),
    variables: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    campaignId: Type.Optional(Id),
    sendAt: Type.Optional(Type.String({ format: "date-time" })),
    transactional: Type.Optional(Type.Boolean({ default: false })),
    topic: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    providerId: Type.Optional(Id),
  }),
  list: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    status: Type.Optional(Status),
    channel: Type.Optional(Channel),
    contactId: Type.Optional(Id),
    campaignId: Type.Optional(Id),
    templateId: Type.Optional(Id),
    from: Type.Optional(Type.String({ format: "date-time" })),
    to: Type.Optional(Type.String({ format: "date-time" })),
  }),
  get: Params({ workspaceId: WorkspaceIdParam, messageId: Id }),
  track: Params({
    messageId: Type.String({ minLength: 1, maxLength: 64 }),
    u: Type.Optional(Type.String({ maxLength: 64 })),
    s: Type.Optional(Type.String({ maxLength: 64 })),
  }),
  shortLinks: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    campaignId: Type.Optional(Id),
    templateId: Type.Optional(Id),
  }),
  sendTest: Params({
    channel: Channel,
    to: Type.Array(Type.String({ maxLength: 254 }), { maxItems: 5 }),
    content: Type.Record(Type.String(), Type.Unknown()),
  }),
  pushTest: Params({
    subscriptionIds: Type.Array(Id, { minItems: 1, maxItems: 100 }),
    content: Type.Object({ title: Type.String({ maxLength: 200 }), body: Type.String({ maxLength: 2000 }) }),
  }),
  enqueue: Params({
    channel: Channel,
    templateId: Id,
    contactIds: Type.Array(Id, { minItems: 1, maxItems: 1000 }),
    campaignId: Type.Optional(Id),
    enrollmentId: Type.Optional(Id),
    messageIds: Type.Optional(
      Type.Array(Id, {
        maxItems: 1000,
        description:
          "One per contact, in order: the ids the messages take. A contact whose message already exists is skipped (`already_queued`): a retried journey step never sends twice",
      }),
    ),
    variables: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    sendAt: Type.Optional(Type.String({ format: "date-time" })),
    transactional: Type.Optional(Type.Boolean({ default: false })),
    topic: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    providerId: Type.Optional(Id),
  }),
  sendNow: Params(sendNowFields),
  sendNowBatch: Params({
    sends: Type.Array(Params(sendNowFields), { minItems: 1, maxItems: SEND_NOW_BATCH }),
  }),
  repliedTo: Params({
    references: Type.Array(Type.String({ minLength: 1, maxLength: 998 }), {
      maxItems: 100,
      description: "The ids a mail's In-Reply-To and References name",
    }),
  }),
  variantStats: Params({ templateId: Id }),
  capState: Params({ contactId: Id, channel: Channel }),
  processDue: Params({ limit: Type.Optional(Int32({ minimum: 1, maximum: 5000 })) }),
  requeueFailed: Params({ messageId: Id }),
  providerEvents: Params({
    providerId: Id,
    events: Type.Array(
      Type.Object({
        kind: StringEnum(["delivered", "bounced", "complained", "failed", "opened", "clicked"]),
        messageId: Nullable(Type.String({ maxLength: 256 })),
        providerMessageId: Nullable(Type.String({ maxLength: 256 })),
        eventId: Nullable(Type.String({ maxLength: 256 })),
        hard: Type.Optional(Type.Boolean()),
        reason: Type.Optional(Nullable(Type.String())),
        url: Type.Optional(Nullable(Type.String())),
      }),
      { maxItems: 1000 },
    ),
  }),
};

export const results = {
  message: MessageSchema,
  /** Each send of a `sendNowBatch`, in order: its message, or the error `sendNow` would have thrown for it. */
  sendNowBatch: Type.Array(
    Type.Union([
      Type.Object({ message: MessageSchema }),
      Type.Object({
        error: Type.Object({ code: Type.Integer(), type: Type.String(), message: Type.String() }),
      }),
    ]),
  ),
  detail: MessageDetailSchema,
  list: Paginated(MessageSchema),
  shortLinks: Paginated(ShortLinkSchema),
  sendTest: SendTestResultSchema,
  capState: Type.Object({
    capped: Type.Boolean(),
    freeAt: Nullable(DateTime({ description: "When the oldest counted send leaves the window" })),
  }),
  enqueue: Type.Object({
    queued: Type.Integer(),
    suppressed: Type.Integer(),
    skipped: Type.Array(
      Type.Object({
        contactId: Type.String(),
        reason: StringEnum(["not_found", "no_address", "already_queued"]),
      }),
    ),
    messageIds: Type.Array(Type.String()),
  }),
  repliedTo: Type.Array(
    Type.Object({
      id: Type.String(),
      contactId: Nullable(Type.String()),
      campaignId: Nullable(Type.String()),
    }),
  ),
  variantStats: Type.Array(
    Type.Object({
      variant: Type.String(),
      sent: Type.Integer(),
      opened: Type.Integer(),
      clicked: Type.Integer(),
    }),
  ),
  processDue: Type.Object({
    sent: Type.Integer(),
    failed: Type.Integer(),
    retried: Type.Integer(),
    suppressed: Type.Integer(),
  }),
  providerEvents: Type.Object({
    applied: Type.Integer(),
    pending: Type.Integer(),
  }),
  pixel: {
    "200": {
      description: "A 43-byte transparent GIF",
      content: { "image/gif": { schema: { type: "string", format: "binary" } } },
    },
    "302": { description: "Click: to the short link's URL" },
    "400": {
      $ref: "#/components/responses/Error",
      description: "Click: the link's signature does not verify (INVALID_TOKEN)",
    },
  },
};
