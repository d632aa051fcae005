import { Type } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import { Component, DateTime, Int32, Nullable, Params, Trimmed, WorkspaceIdParam } from "../../lib/schema";
import type { FieldCondition, FilterGroup } from "../segments/filter-schema";

const RuleId = Type.String({ minLength: 1, maxLength: 64 });
const ContactId = Type.String({ minLength: 1, maxLength: 64 });
const Count = Int32({ minimum: 1, maximum: 1_000_000 });
const Days = Int32({ minimum: 1, maximum: 3650 });
const Points = Int32({ minimum: -1_000_000, maximum: 1_000_000 });
/** `where` is checked by the segments filter language (with the path of the bad node). */
const Where = Type.Unsafe<FieldCondition[] | null>({
  type: ["array", "null"],
  maxItems: 50,
  description: "Conditions on the event's fields, in the segments filter language",
});
/** A filter group of the segments language, checked by filter-schema.ts (with the path of the bad node). */
const Condition = Type.Unsafe<FilterGroup>({
  type: "object",
  description: "A segments filter group on the contact",
});
const Decay = Nullable(Type.Object({ days: Days }, { additionalProperties: false }));
const PeriodCap = Nullable(Type.Object({ max: Count, days: Days }, { additionalProperties: false }));

export const RuleSchema = Component(
  "ScoringRule",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    eventType: Nullable(Type.String()),
    where: Type.Unsafe<FieldCondition[] | null>({ type: ["array", "null"], items: { type: "object" } }),
    condition: Type.Unsafe<FilterGroup | null>({ type: ["object", "null"] }),
    points: Type.Integer(),
    maxPerContact: Nullable(Type.Integer()),
    periodCap: Nullable(Type.Object({ max: Type.Integer(), days: Type.Integer() })),
    decay: Nullable(Type.Object({ days: Type.Integer() })),
    active: Type.Boolean(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

const ScoreSchema = Component(
  "Score",
  Type.Object({
    score: Type.Number(),
    history: Type.Array(
      Type.Object({
        points: Type.Integer(),
        ruleId: Nullable(Type.String()),
        eventId: Nullable(Type.String()),
        reason: Nullable(Type.String()),
        createdAt: DateTime(),
      }),
    ),
  }),
);

export const results = {
  list: Paginated(RuleSchema),
  rule: RuleSchema,
  score: ScoreSchema,
  job: Type.Object({ jobId: Type.String() }),
  success: Type.Object({ success: Type.Literal(true) }),
  applyEvent: Type.Object({
    scoreBefore: Nullable(Type.Number()),
    score: Nullable(Type.Number()),
    applied: Type.Array(Type.Object({ ruleId: Type.String(), points: Type.Integer() })),
  }),
  applyContactRules: Type.Object({ changed: Type.Integer() }),
};

/** The writable fields of a rule (create requires `name` and `points`). */
const ruleFields = {
  // Exactly one of eventType and condition (checked by the repo, 400 naming the field).
  eventType: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  condition: Type.Optional(Condition),
  where: Type.Optional(Where),
  maxPerContact: Type.Optional(Nullable(Count)),
  periodCap: Type.Optional(PeriodCap),
  decay: Type.Optional(Decay),
  active: Type.Optional(Type.Boolean()),
};

export const schemas = {
  list: Params({ workspaceId: WorkspaceIdParam, ...PageQuery }),
  get: Params({ workspaceId: WorkspaceIdParam, ruleId: RuleId }),
  create: Params({
    workspaceId: WorkspaceIdParam,
    name: Trimmed({ minLength: 1, maxLength: 200 }),
    points: Points,
    ...ruleFields,
  }),
  update: Params({
    workspaceId: WorkspaceIdParam,
    ruleId: RuleId,
    name: Type.Optional(Trimmed({ minLength: 1, maxLength: 200 })),
    points: Type.Optional(Points),
    ...ruleFields,
  }),
  recalculate: Params({ workspaceId: WorkspaceIdParam }),
  scores: Params({
    workspaceId: WorkspaceIdParam,
    contactId: ContactId,
    limit: Type.Optional(Int32({ minimum: 1, description: "Default 50; more than 200 is clamped" })),
  }),
  adjust: Params({
    workspaceId: WorkspaceIdParam,
    contactId: ContactId,
    points: Int32({ minimum: -1_000_000, maximum: 1_000_000, not: { const: 0 }, description: "Not 0" }),
    reason: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  }),
  applyContactRules: Params({ contactIds: Type.Array(Type.String(), { maxItems: 100_000 }) }),
  applyEvent: Params({
    eventId: Type.String({ minLength: 1, maxLength: 64 }),
    contactId: ContactId,
    type: Type.String({ minLength: 1, maxLength: 200 }),
    metadata: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
    timestamp: Type.Optional(Type.Unsafe<Date | string>({ description: "When the event happened" })),
  }),
};
