import { Type } from "@sinclair/typebox";
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
import type { FilterGroup } from "./filter-schema";

const SegmentId = Type.String({ minLength: 1, maxLength: 64 });
const ContactIds = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 1000 });
const SegmentType = StringEnum(["dynamic", "static"]);
/** A time bound: a date (midnight UTC) or a date-time. */
const Moment = Type.Union([Type.String({ format: "date-time" }), Type.String({ format: "date" })]);
/** The filter's own language is checked by filter-schema.ts (with the path of the bad node). */
const Filter = Type.Unsafe<FilterGroup>({
  type: "object",
  description: "A filter group `{match: all|any, conditions: [...]}` (see the segments documentation)",
});
const Description = Type.Optional(Nullable(Type.String({ maxLength: 2000 })));

export const SegmentSchema = Component(
  "Segment",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    type: SegmentType,
    filter: Nullable(Filter),
    memberCount: Nullable(Type.Integer({ description: "null while a background computation runs" })),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
/** A created or changed segment whose membership is computed as a job (a workspace over SEGMENT_SYNC_LIMIT contacts). */
const ComputingSegment = Type.Intersect([SegmentSchema, Type.Object({ jobId: Type.String() })]);

const MemberSchema = Component(
  "SegmentMember",
  Type.Object({
    id: Type.String(),
    email: Nullable(Type.String()),
    firstName: Nullable(Type.String()),
    lastName: Nullable(Type.String()),
    enteredAt: DateTime(),
  }),
);

const ContactSample = Type.Object({
  id: Type.String(),
  email: Nullable(Type.String()),
  phone: Nullable(Type.String()),
  firstName: Nullable(Type.String()),
  lastName: Nullable(Type.String()),
  externalId: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  attributes: Type.Record(Type.String(), Type.Unknown()),
  stage: Nullable(Type.String()),
  score: Type.Number(),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

export const results = {
  list: Paginated(SegmentSchema),
  segment: SegmentSchema,
  computing: ComputingSegment,
  preview: Type.Object({ count: Type.Integer(), sample: Type.Array(ContactSample) }),
  success: Type.Object({ success: Type.Literal(true) }),
  job: Type.Object({ jobId: Type.String() }),
  growth: Type.Object({
    segmentId: Type.String(),
    memberCount: Nullable(Type.Integer()),
    series: Type.Array(
      Type.Object({
        date: Type.String({ format: "date" }),
        memberCount: Type.Integer(),
        entered: Type.Integer(),
        exited: Type.Integer(),
      }),
    ),
  }),
  members: Paginated(MemberSchema),
  added: Type.Object({ added: Type.Integer(), memberCount: Nullable(Type.Integer()) }),
  removed: Type.Object({
    success: Type.Literal(true),
    removed: Type.Integer(),
    memberCount: Nullable(Type.Integer()),
  }),
  evaluateContact: Type.Object({ entered: Type.Array(Type.String()), exited: Type.Array(Type.String()) }),
  evaluateContacts: Type.Object({ entered: Type.Integer(), exited: Type.Integer() }),
  matches: Type.Object({ matches: Type.Boolean() }),
  matchingContacts: Type.Object({ contactIds: Type.Array(Type.String()) }),
  memberOf: Type.Object({ segmentIds: Type.Array(Type.String()) }),
  memberIds: Type.Object({ contactIds: Type.Array(Type.String()) }),
};

export const schemas = {
  list: Params({ workspaceId: WorkspaceIdParam, ...PageQuery, type: Type.Optional(SegmentType) }),
  get: Params({ workspaceId: WorkspaceIdParam, segmentId: SegmentId }),
  create: Params({
    workspaceId: WorkspaceIdParam,
    name: Trimmed({ minLength: 1, maxLength: 200 }),
    description: Description,
    type: Type.Optional(StringEnum(["dynamic", "static"], { default: "dynamic" })),
    filter: Type.Optional(Filter),
    contactIds: Type.Optional(ContactIds),
  }),
  update: Params({
    workspaceId: WorkspaceIdParam,
    segmentId: SegmentId,
    name: Type.Optional(Trimmed({ minLength: 1, maxLength: 200 })),
    description: Description,
    filter: Type.Optional(Filter),
  }),
  growth: Params({
    workspaceId: WorkspaceIdParam,
    segmentId: SegmentId,
    from: Type.Optional(Moment),
    to: Type.Optional(Moment),
    days: Type.Optional(Int32({ minimum: 1, maximum: 366, description: "Days back from `to` (default 30)" })),
  }),
  members: Params({ workspaceId: WorkspaceIdParam, segmentId: SegmentId, ...PageQuery }),
  addMembers: Params({ workspaceId: WorkspaceIdParam, segmentId: SegmentId, contactIds: ContactIds }),
  removeMembers: Params({
    workspaceId: WorkspaceIdParam,
    segmentId: SegmentId,
    // Body `{contactIds: [...]}` or query `?contactIds=a,b`.
    contactIds: Type.Union([ContactIds, Type.String({ minLength: 1, maxLength: 65_000 })]),
  }),
  preview: Params({ workspaceId: WorkspaceIdParam, filter: Filter }),
  evaluateContact: Params({
    contactId: Type.String({ minLength: 1, maxLength: 64 }),
    eventId: Type.Optional(Type.String({ maxLength: 64 })),
    eventType: Type.Optional(Type.String({ maxLength: 200 })),
    scoreChanged: Type.Optional(Type.Boolean()),
  }),
  matches: Params({ contactId: Type.String({ minLength: 1, maxLength: 64 }), filter: Filter }),
  memberOf: Params({
    contactId: Type.String({ minLength: 1, maxLength: 64 }),
    segmentIds: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 200 }),
  }),
  memberIds: Params({
    segmentId: SegmentId,
    after: Type.Optional(Type.String({ maxLength: 64, description: "The last id of the previous page" })),
    limit: Int32({ minimum: 1, maximum: 5000 }),
  }),
  matchingContacts: Params({
    contactIds: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 1000 }),
    filter: Filter,
  }),
  eventMatches: Params({
    eventId: Type.String({ minLength: 1, maxLength: 64 }),
    where: Type.Array(Type.Record(Type.String(), Type.Unknown()), { maxItems: 200 }),
  }),
  evaluateContacts: Params({
    contactIds: Type.Array(Type.String(), { maxItems: 100_000 }),
    scoreChanged: Type.Optional(Type.Boolean()),
  }),
};
