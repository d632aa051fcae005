import { Type, type Static } from "@sinclair/typebox";
import { INBOX_CHANNELS } from "../../lib/channels";
import { PageQuery, PaginationSchema } from "../../lib/pagination";
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

/** Params and answers of every inbox action (contract-messaging 11); they are also its OpenAPI description. */

const Id = Type.String({ minLength: 1, maxLength: 64 });
export const InboxChannel = StringEnum(INBOX_CHANNELS);
export const THREAD_STATUSES = ["open", "pending", "snoozed", "closed"] as const;
export type ThreadStatus = (typeof THREAD_STATUSES)[number];
const Body = Trimmed({ minLength: 1, maxLength: 4000 });
const Tags = Type.Array(Trimmed({ minLength: 1, maxLength: 100 }), { maxItems: 50 });
const Keywords = Type.Array(Trimmed({ minLength: 1, maxLength: 100 }), {
  maxItems: 50,
  description: "Matched as whole words in the inbound text, any case (none: any text)",
});
const Minute = Type.String({
  pattern: "^([01]\\d|2[0-3]):[0-5]\\d$",
  errorMessage: { pattern: "must be a time as HH:MM" },
});
const Weekdays = Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), {
  minItems: 1,
  maxItems: 7,
  description: "ISO weekdays, 1 = Monday … 7 = Sunday",
});
const Period = Type.Object({ days: Weekdays, start: Minute, end: Minute }, { additionalProperties: false });

/**
 * Business hours in the workspace's `settings.timezone`: the contract's
 * `{days, start, end}`, and optionally more `periods` (an end not after its
 * start runs overnight) and `holidays` (dates closed all day).
 */
export const BusinessHoursSchema = Component(
  "InboxBusinessHours",
  Type.Object(
    {
      days: Type.Optional(Weekdays),
      start: Type.Optional(Minute),
      end: Type.Optional(Minute),
      periods: Type.Optional(Type.Array(Period, { maxItems: 50 })),
      holidays: Type.Optional(
        Type.Array(Type.String({ format: "date", description: "YYYY-MM-DD, local" }), { maxItems: 400 }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const ContactBriefSchema = Component(
  "InboxContact",
  Type.Object({
    id: Type.String(),
    email: Nullable(Type.String()),
    phone: Nullable(Type.String()),
    firstName: Nullable(Type.String()),
    lastName: Nullable(Type.String()),
  }),
);
export type ContactBrief = Static<typeof ContactBriefSchema>;

export const ThreadSchema = Component(
  "InboxThread",
  Type.Object({
    id: Type.String(),
    channel: InboxChannel,
    contactId: Type.String(),
    contact: Nullable(ContactBriefSchema),
    subject: Nullable(Type.String()),
    status: StringEnum(THREAD_STATUSES),
    assigneeId: Nullable(Type.String()),
    snoozedUntil: Nullable(DateTime()),
    tags: Type.Array(Type.String()),
    lastMessageAt: DateTime(),
    unread: Type.Integer({ description: "Inbound messages since a member last read or answered the thread" }),
    originMessageId: Nullable(
      Type.String({ description: "The sent message (a campaign's) this conversation replies to" }),
    ),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type ThreadView = Static<typeof ThreadSchema>;

const DROPPED_REASONS = ["too_large", "too_many"] as const;

export const InboxAttachmentSchema = Component(
  "InboxAttachment",
  Type.Object({
    id: Nullable(Type.String({ description: "null: dropped" })),
    fileName: Type.String(),
    contentType: Type.String({
      description: "Read from the file's bytes; a dropped one's as the mail declared",
    }),
    size: Type.Integer({ description: "Bytes" }),
    url: Nullable(Type.String({ description: "The file (`inbox.read`); null: dropped" })),
    dropped: Nullable(
      StringEnum(DROPPED_REASONS, {
        description: "Not kept: larger than 10 MiB (`too_large`) or past the first 10 (`too_many`)",
      }),
    ),
  }),
);
export type InboxAttachmentView = Static<typeof InboxAttachmentSchema>;

export const InboxMessageSchema = Component(
  "InboxMessage",
  Type.Object({
    id: Type.String(),
    direction: StringEnum(["inbound", "outbound"]),
    body: Type.String(),
    authorId: Nullable(
      Type.String({ description: "The member who wrote it; null: the contact or an auto-reply" }),
    ),
    status: StringEnum(["received", "sending", "sent", "failed"]),
    error: Nullable(Type.String()),
    providerMessageId: Nullable(Type.String()),
    messageId: Nullable(Type.String({ description: "The send's message (`{ws}/messages/{id}`)" })),
    attachments: Type.Array(InboxAttachmentSchema, { description: "An inbound mail's files" }),
    createdAt: DateTime(),
  }),
);
export type InboxMessageView = Static<typeof InboxMessageSchema>;

const UnreadSummary = Component(
  "InboxUnread",
  Type.Object(
    {
      threads: Type.Integer(),
      messages: Type.Integer(),
      mine: Type.Object({ threads: Type.Integer(), messages: Type.Integer() }),
      byAssignee: Type.Array(
        Type.Object({
          assigneeId: Nullable(Type.String()),
          threads: Type.Integer(),
          messages: Type.Integer(),
        }),
      ),
    },
    { description: "Unread threads and messages of the workspace's open conversations, per member" },
  ),
);

export const RoundRobinConfig = Type.Object(
  {
    memberIds: Type.Array(Id, { minItems: 1, maxItems: 100, description: "User ids of workspace members" }),
    maxOpen: Type.Optional(
      Int32({ minimum: 1, description: "Open threads a member holds at most; the rest wait, oldest first" }),
    ),
    reassignAfterMinutes: Type.Optional(
      Int32({ minimum: 1, maximum: 43_200, description: "Unanswered this long: handed to the next member" }),
    ),
    businessHours: Type.Optional(Nullable(BusinessHoursSchema)),
  },
  { additionalProperties: false },
);
export const ConditionConfig = Type.Object(
  {
    channel: Type.Optional(Nullable(InboxChannel)),
    keywords: Type.Optional(Keywords),
    filter: Type.Optional(
      Nullable(
        Type.Record(Type.String(), Type.Unknown(), { description: "A segment filter on the contact" }),
      ),
    ),
    assigneeId: Id,
    businessHours: Type.Optional(Nullable(BusinessHoursSchema)),
  },
  { additionalProperties: false },
);
export type RuleConfig = Static<typeof RoundRobinConfig> | Static<typeof ConditionConfig>;

export const AssignmentRuleSchema = Component(
  "InboxAssignmentRule",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    type: StringEnum(["round_robin", "condition"]),
    priority: Type.Integer(),
    active: Type.Boolean(),
    config: Type.Record(Type.String(), Type.Unknown()),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type AssignmentRuleView = Static<typeof AssignmentRuleSchema>;

export const AutoReplySchema = Component(
  "InboxAutoReply",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    channel: Nullable(InboxChannel),
    keywords: Type.Array(Type.String()),
    businessHours: Nullable(BusinessHoursSchema),
    body: Type.String(),
    active: Type.Boolean(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type AutoReplyView = Static<typeof AutoReplySchema>;

export const CannedResponseSchema = Component(
  "InboxCannedResponse",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    shortcode: Type.String(),
    body: Type.String(),
    channel: Nullable(InboxChannel),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type CannedResponseView = Static<typeof CannedResponseSchema>;

const Name = Trimmed({ minLength: 1, maxLength: 200 });
const Shortcode = Type.String({
  pattern: "^[a-z0-9_-]{1,32}$",
  errorMessage: { pattern: "must be 1-32 of a-z, 0-9, _ and -" },
});
const ruleFields = {
  name: Name,
  priority: Type.Optional(Int32({ description: "Lowest number first (default 0)" })),
  active: Type.Optional(Type.Boolean()),
};
const autoReplyFields = {
  name: Name,
  channel: Type.Optional(Nullable(InboxChannel)),
  keywords: Type.Optional(Keywords),
  businessHours: Type.Optional(Nullable(BusinessHoursSchema)),
  body: Body,
  active: Type.Optional(Type.Boolean()),
};
const cannedFields = {
  name: Name,
  shortcode: Shortcode,
  body: Body,
  channel: Type.Optional(Nullable(InboxChannel)),
};
/** An inbound message for its conversation (`receive`, and each of `receiveBatch`). */
const ReceiveParams = Params({
  channel: InboxChannel,
  contactId: Id,
  providerId: Id,
  from: Type.String({ maxLength: 320 }),
  to: Type.String({ maxLength: 320 }),
  text: Type.String({ maxLength: 100_000 }),
  subject: Type.Optional(Type.String({ maxLength: 998 })),
  providerMessageId: Type.Optional(Nullable(Type.String({ maxLength: 998 }))),
  references: Type.Optional(Type.Array(Type.String({ maxLength: 998 }), { maxItems: 100 })),
  attachments: Type.Optional(
    Type.Array(
      Type.Object({
        id: Nullable(Id),
        fileName: Type.String({ maxLength: 255 }),
        contentType: Type.String({ maxLength: 255 }),
        size: Type.Integer({ minimum: 0 }),
        storage: Nullable(StringEnum(["local", "s3"])),
        storageKey: Nullable(Type.String({ maxLength: 200 })),
        dropped: Nullable(StringEnum(DROPPED_REASONS)),
      }),
      { maxItems: 50 },
    ),
  ),
});

export const schemas = {
  list: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    status: Type.Optional(StringEnum(THREAD_STATUSES)),
    channel: Type.Optional(InboxChannel),
    assigneeId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: "A user id, or `me`" }),
    ),
    contactId: Type.Optional(Id),
    search: Type.Optional(Trimmed({ maxLength: 200, description: "In the subject and the messages' text" })),
  }),
  create: Params({
    workspaceId: WorkspaceIdParam,
    contactId: Id,
    channel: InboxChannel,
    subject: Type.Optional(Trimmed({ minLength: 1, maxLength: 500 })),
    body: Body,
  }),
  get: Params({ workspaceId: WorkspaceIdParam, threadId: Id }),
  reply: Params({
    workspaceId: WorkspaceIdParam,
    threadId: Id,
    body: Type.Optional(Body),
    cannedResponseId: Type.Optional(Id),
  }),
  update: Params({
    workspaceId: WorkspaceIdParam,
    threadId: Id,
    status: Type.Optional(StringEnum(THREAD_STATUSES)),
    assigneeId: Type.Optional(Nullable(Id)),
    snoozedUntil: Type.Optional(Nullable(Type.String({ format: "date-time" }))),
    tags: Type.Optional(Tags),
  }),
  deliver: Params({ workspaceId: WorkspaceIdParam, threadId: Id, replyId: Id }),
  attachment: Params({ workspaceId: WorkspaceIdParam, threadId: Id, attachmentId: Id }),
  receive: ReceiveParams,
  receiveBatch: Params({
    messages: Type.Array(ReceiveParams, { minItems: 1, maxItems: 200 }),
  }),
  listRules: Params({ workspaceId: WorkspaceIdParam }),
  createRule: Params({
    workspaceId: WorkspaceIdParam,
    ...ruleFields,
    type: StringEnum(["round_robin", "condition"]),
    config: Type.Record(Type.String(), Type.Unknown(), {
      description:
        "round_robin: `{memberIds, maxOpen?, reassignAfterMinutes?, businessHours?}`; condition: `{channel?, keywords?, filter?, assigneeId, businessHours?}`",
    }),
  }),
  updateRule: Params({
    workspaceId: WorkspaceIdParam,
    ruleId: Id,
    name: Type.Optional(Name),
    priority: ruleFields.priority,
    active: ruleFields.active,
    config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
  removeRule: Params({ workspaceId: WorkspaceIdParam, ruleId: Id }),
  listAutoReplies: Params({ workspaceId: WorkspaceIdParam }),
  createAutoReply: Params({ workspaceId: WorkspaceIdParam, ...autoReplyFields }),
  updateAutoReply: Params({
    workspaceId: WorkspaceIdParam,
    ruleId: Id,
    ...autoReplyFields,
    name: Type.Optional(Name),
    body: Type.Optional(Body),
  }),
  removeAutoReply: Params({ workspaceId: WorkspaceIdParam, ruleId: Id }),
  listCanned: Params({ workspaceId: WorkspaceIdParam }),
  createCanned: Params({ workspaceId: WorkspaceIdParam, ...cannedFields }),
  updateCanned: Params({
    workspaceId: WorkspaceIdParam,
    responseId: Id,
    ...cannedFields,
    name: Type.Optional(Name),
    shortcode: Type.Optional(Shortcode),
    body: Type.Optional(Body),
  }),
  removeCanned: Params({ workspaceId: WorkspaceIdParam, responseId: Id }),
};

/** An inbound message filed (`inbox.receive`, each of `inbox.receiveBatch`). */
const ReceivedSchema = Type.Object({
  threadId: Type.String(),
  inboundId: Type.String(),
  duplicate: Type.Boolean({ description: "The provider delivered this message before" }),
  keptFiles: Type.Array(Type.String(), {
    description:
      "A duplicate's: the storage keys of the files the message stored before holds; the filer removes only the others",
  }),
});

export type Received = Static<typeof ReceivedSchema>;

export const results = {
  list: Type.Object({
    data: Type.Array(ThreadSchema),
    pagination: PaginationSchema,
    unread: UnreadSummary,
  }),
  thread: ThreadSchema,
  detail: Type.Intersect([ThreadSchema, Type.Object({ messages: Type.Array(InboxMessageSchema) })]),
  reply: InboxMessageSchema,
  receive: ReceivedSchema,
  receiveBatch: Type.Array(ReceivedSchema),
  rules: Type.Array(AssignmentRuleSchema),
  rule: AssignmentRuleSchema,
  autoReplies: Type.Array(AutoReplySchema),
  autoReply: AutoReplySchema,
  cannedList: Type.Array(CannedResponseSchema),
  canned: CannedResponseSchema,
  success: Type.Object({ success: Type.Literal(true) }),
  count: Type.Integer(),
};

export type ReceiveInput = Static<typeof schemas.receive>;
