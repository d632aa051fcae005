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
import { NODE_TYPES } from "./workflow";

const Id = Type.String({ minLength: 1, maxLength: 64 });

export const CAMPAIGN_STATUSES = ["draft", "scheduled", "active", "paused", "completed", "archived"] as const;
export const TRIGGER_TYPES = [
  "event",
  "segment_entered",
  "segment_exited",
  "contact_created",
  "contact_updated",
  "form_submitted",
  "date_anniversary",
  "manual",
] as const;
export const ENROLLMENT_STATUSES = ["active", "waiting", "completed", "exited", "failed"] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
export type TriggerType = (typeof TRIGGER_TYPES)[number];

/** Workflows are checked by workflow.ts (paths such as `nodes[3].config.duration`), so the params take any shape. */
const WorkflowParam = Type.Object(
  {
    nodes: Type.Array(Type.Record(Type.String(), Type.Unknown()), { maxItems: 200 }),
    edges: Type.Array(Type.Record(Type.String(), Type.Unknown()), { maxItems: 1000 }),
  },
  { description: "`{nodes: [{id, type, config}], edges: [{from, to, branch?}]}`" },
);
export const WorkflowSchema = Component(
  "Workflow",
  Type.Object({
    nodes: Type.Array(
      Type.Object({
        id: Type.String(),
        type: StringEnum(NODE_TYPES),
        config: Type.Record(Type.String(), Type.Unknown()),
      }),
    ),
    edges: Type.Array(
      Type.Object({ from: Type.String(), to: Type.String(), branch: Type.Optional(Nullable(Type.String())) }),
    ),
  }),
);

export const TriggerSchema = Component(
  "CampaignTrigger",
  Type.Object({
    id: Type.String(),
    type: StringEnum(TRIGGER_TYPES),
    config: Type.Record(Type.String(), Type.Unknown()),
    reentry: StringEnum(["once", "always", "cooldown"]),
    cooldownHours: Nullable(Type.Integer()),
    active: Type.Boolean(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type TriggerView = Static<typeof TriggerSchema>;

const Stats = Type.Object({
  enrolled: Type.Integer(),
  active: Type.Integer(),
  completed: Type.Integer(),
  exited: Type.Integer(),
});
const campaignFields = {
  id: Type.String(),
  name: Type.String(),
  type: StringEnum(["workflow", "broadcast"]),
  status: StringEnum(CAMPAIGN_STATUSES),
  scheduledAt: Nullable(DateTime()),
  priority: Type.Integer({
    description: "Higher wins when two campaigns would pass one contact's frequency cap",
  }),
  publishedVersion: Nullable(Type.Integer()),
  stats: Stats,
  createdAt: DateTime(),
  updatedAt: DateTime(),
};
export const CampaignSchema = Component("Campaign", Type.Object(campaignFields));
export type CampaignView = Static<typeof CampaignSchema>;
export const CampaignDetailSchema = Component(
  "CampaignDetail",
  Type.Object({
    ...campaignFields,
    workflow: WorkflowSchema,
    draftChanged: Type.Boolean({ description: "The draft differs from the newest version" }),
    triggers: Type.Array(TriggerSchema),
  }),
);
export type CampaignDetail = Static<typeof CampaignDetailSchema>;

export const VersionSchema = Component(
  "CampaignVersion",
  Type.Object({
    id: Type.String(),
    number: Type.Integer(),
    workflow: WorkflowSchema,
    triggers: Type.Array(Type.Record(Type.String(), Type.Unknown())),
    note: Nullable(Type.String()),
    publishedAt: DateTime(),
  }),
);
export type VersionView = Static<typeof VersionSchema>;

export const EnrollmentSchema = Component(
  "CampaignEnrollment",
  Type.Object({
    id: Type.String(),
    campaignId: Type.String(),
    contactId: Type.String(),
    version: Type.Integer(),
    status: StringEnum(ENROLLMENT_STATUSES),
    currentNodeId: Nullable(Type.String()),
    waitingUntil: Nullable(DateTime()),
    triggerId: Nullable(Type.String()),
    exitReason: Nullable(Type.String()),
    finishedAt: Nullable(DateTime()),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type EnrollmentView = Static<typeof EnrollmentSchema>;

export const LogSchema = Component(
  "CampaignLog",
  Type.Object({
    id: Type.String(),
    enrollmentId: Type.String(),
    contactId: Type.String(),
    nodeId: Type.String(),
    outcome: StringEnum(["ok", "branched", "skipped", "failed"]),
    branch: Nullable(Type.String()),
    detail: Nullable(Type.String()),
    createdAt: DateTime(),
  }),
);
export type LogView = Static<typeof LogSchema>;

const SignificanceSchema = Type.Object(
  {
    method: Type.Literal("two-proportion z-test"),
    leader: Nullable(Type.String()),
    runnerUp: Nullable(Type.String()),
    z: Nullable(Type.Number()),
    pValue: Nullable(Type.Number()),
    confidence: Nullable(Type.Number({ description: "1 − pValue: how sure the leader beats the runner-up" })),
  },
  { description: "The leading variant against the runner-up on the test's metric (two-sided)" },
);
const AbVariantFigures = Type.Object({
  id: Type.String(),
  weight: Type.Integer(),
  enrolled: Type.Optional(Type.Integer()),
  sent: Type.Integer(),
  opened: Type.Integer(),
  clicked: Type.Integer(),
  goals: Type.Optional(Type.Integer()),
  rate: Type.Number({ description: "open: opened/sent; click: clicked/sent; goal: goals/enrolled" }),
});
const AbStatus = StringEnum(["running", "decided"]);
export const CampaignAbTestSchema = Component(
  "CampaignAbTest",
  Type.Object({
    nodeId: Type.String(),
    metric: StringEnum(["open", "click", "goal"]),
    status: AbStatus,
    winner: Nullable(Type.String()),
    decidedBy: Nullable(StringEnum(["hand", "test"])),
    autoWinner: Nullable(Type.Object({ minSample: Type.Integer(), confidence: Type.Number() })),
    variants: Type.Array(AbVariantFigures),
    significance: SignificanceSchema,
  }),
);
export const AbTestSchema = Component(
  "AbTest",
  Type.Object({
    kind: StringEnum(["campaign", "template"]),
    campaignId: Nullable(Type.String()),
    nodeId: Nullable(Type.String()),
    templateId: Nullable(Type.String()),
    metric: StringEnum(["open", "click", "goal"]),
    status: AbStatus,
    winner: Nullable(Type.String()),
    variants: Type.Array(AbVariantFigures),
    significance: SignificanceSchema,
  }),
);

const ActionSchema = Type.Object({
  id: Type.String(),
  type: StringEnum(NODE_TYPES),
  config: Type.Record(Type.String(), Type.Unknown()),
  next: Type.Array(Type.Object({ to: Type.String(), branch: Nullable(Type.String()) })),
});

const TriggerConfig = Type.Optional(
  Type.Record(Type.String(), Type.Unknown(), {
    description:
      "event `{eventType, where?}`; segment_entered|segment_exited `{segmentId}`; contact_updated `{fields?}` (field names; any change when absent); form_submitted `{formId?}`; date_anniversary `{field, offsetDays?, time}`; contact_created, manual `{}`",
  }),
);
const Reentry = StringEnum(["once", "always", "cooldown"]);
const CampaignPath = { workspaceId: WorkspaceIdParam, campaignId: Id };

export const schemas = {
  list: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    status: Type.Optional(StringEnum(CAMPAIGN_STATUSES)),
    type: Type.Optional(StringEnum(["workflow", "broadcast"])),
    search: Type.Optional(Type.String({ maxLength: 200 })),
  }),
  create: Params({
    workspaceId: WorkspaceIdParam,
    name: Trimmed({ minLength: 1, maxLength: 200 }),
    workflow: Type.Optional(WorkflowParam),
    priority: Type.Optional(Int32({ minimum: -1000, maximum: 1000 })),
  }),
  get: Params(CampaignPath),
  update: Params({
    ...CampaignPath,
    name: Type.Optional(Trimmed({ minLength: 1, maxLength: 200 })),
    status: Type.Optional(StringEnum(CAMPAIGN_STATUSES)),
    scheduledAt: Type.Optional(Nullable(Type.String({ format: "date-time" }))),
    priority: Type.Optional(Int32({ minimum: -1000, maximum: 1000 })),
  }),
  workflowPut: Params({ ...CampaignPath, ...WorkflowParam.properties }),
  versions: Params({ ...CampaignPath, ...PageQuery }),
  versionCreate: Params({ ...CampaignPath, note: Type.Optional(Type.String({ maxLength: 1000 })) }),
  restore: Params({ ...CampaignPath, versionId: Id }),
  actionCreate: Params({
    ...CampaignPath,
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    type: StringEnum(NODE_TYPES.filter((t) => t !== "entry")),
    config: Type.Record(Type.String(), Type.Unknown()),
    after: Type.Optional(Id),
    branch: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  }),
  actionUpdate: Params({ ...CampaignPath, actionId: Id, config: Type.Record(Type.String(), Type.Unknown()) }),
  actionRemove: Params({ ...CampaignPath, actionId: Id }),
  triggerCreate: Params({
    ...CampaignPath,
    type: StringEnum(TRIGGER_TYPES),
    config: TriggerConfig,
    reentry: Type.Optional(Reentry),
    cooldownHours: Type.Optional(Int32({ minimum: 1, maximum: 87_600 })),
    active: Type.Optional(Type.Boolean()),
  }),
  triggerUpdate: Params({
    ...CampaignPath,
    triggerId: Id,
    config: TriggerConfig,
    reentry: Type.Optional(Reentry),
    cooldownHours: Type.Optional(Nullable(Int32({ minimum: 1, maximum: 87_600 }))),
    active: Type.Optional(Type.Boolean()),
  }),
  triggerRemove: Params({ ...CampaignPath, triggerId: Id }),
  enroll: Params({ ...CampaignPath, contactId: Id }),
  batch: Params({
    ...CampaignPath,
    contactIds: Type.Optional(Type.Array(Id, { minItems: 1, maxItems: 1000 })),
    segmentId: Type.Optional(Id),
    filter: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: "A segment filter (`{match, conditions}`)" }),
    ),
  }),
  enrollments: Params({
    ...CampaignPath,
    ...PageQuery,
    status: Type.Optional(StringEnum(ENROLLMENT_STATUSES)),
    contactId: Type.Optional(Id),
  }),
  logs: Params({
    ...CampaignPath,
    ...PageQuery,
    enrollmentId: Type.Optional(Id),
    contactId: Type.Optional(Id),
    nodeId: Type.Optional(Id),
  }),
  dryRun: Params({
    ...CampaignPath,
    contactId: Id,
    event: Type.Optional(
      Type.Object({
        type: Type.String({ minLength: 1, maxLength: 200 }),
        metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      }),
    ),
  }),
  automationList: Params({ workspaceId: WorkspaceIdParam, contactId: Id, ...PageQuery }),
  automationEnroll: Params({ workspaceId: WorkspaceIdParam, contactId: Id, campaignId: Id }),
  broadcast: Params({
    workspaceId: WorkspaceIdParam,
    name: Trimmed({ minLength: 1, maxLength: 200 }),
    channel: StringEnum(CHANNELS),
    templateId: Id,
    segmentId: Type.Optional(Id),
    contactIds: Type.Optional(Type.Array(Id, { minItems: 1, maxItems: 100_000 })),
    filter: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: "A segment filter (`{match, conditions}`)" }),
    ),
    sendAt: Type.Optional(Type.String({ format: "date-time" })),
    variables: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    topic: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    transactional: Type.Optional(Type.Boolean()),
  }),
  abWinner: Params({ ...CampaignPath, nodeId: Id, variant: Type.String({ minLength: 1, maxLength: 64 }) }),
  abTests: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    kind: Type.Optional(StringEnum(["campaign", "template"])),
  }),
  abTestCreate: Params({
    workspaceId: WorkspaceIdParam,
    templateId: Id,
    variants: Type.Array(
      Type.Object({
        id: StringEnum(["A", "B", "C", "D", "E"]),
        weight: Int32({ minimum: 0, maximum: 100 }),
        content: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      }),
      { minItems: 2, maxItems: 5 },
    ),
    metric: Type.Optional(StringEnum(["open", "click"])),
  }),
  handleEvent: Params(
    {
      id: Type.String(),
      type: Type.String(),
      contactId: Nullable(Type.String()),
      metadata: Type.Optional(Type.Unknown()),
      timestamp: Type.Optional(Type.Unknown()),
    },
    { additionalProperties: true },
  ),
  templateUse: Params({ templateId: Id }),
  processDue: Params({ limit: Type.Optional(Int32({ minimum: 1, maximum: 5000 })) }),
};

export const results = {
  list: Paginated(CampaignSchema),
  detail: CampaignDetailSchema,
  success: Type.Object({ success: Type.Literal(true) }),
  validation: Type.Object({
    valid: Type.Boolean(),
    errors: Type.Array(Type.Object({ field: Type.String(), message: Type.String() })),
  }),
  versions: Paginated(VersionSchema),
  version: VersionSchema,
  workflow: WorkflowSchema,
  actions: Type.Array(ActionSchema),
  action: ActionSchema,
  triggers: Type.Array(TriggerSchema),
  trigger: TriggerSchema,
  enrollment: EnrollmentSchema,
  enrollments: Paginated(EnrollmentSchema),
  batch: Type.Object({
    enrolled: Type.Integer(),
    skipped: Type.Array(Type.Object({ contactId: Type.String(), reason: Type.String() })),
  }),
  logs: Paginated(LogSchema),
  dryRun: Type.Object({
    wouldEnroll: Type.Boolean(),
    reason: Nullable(Type.String()),
    path: Type.Array(
      Type.Object({
        nodeId: Type.String(),
        outcome: StringEnum(["ok", "branched", "skipped", "failed"]),
        branch: Nullable(Type.String()),
        reason: Type.String(),
      }),
    ),
  }),
  handleEvent: Type.Object({ enrolled: Type.Integer(), resumed: Type.Integer(), completed: Type.Integer() }),
  processDue: Type.Object({
    activated: Type.Integer(),
    advanced: Type.Integer(),
    failed: Type.Integer(),
    resumedBroadcasts: Type.Integer(),
    decidedAbTests: Type.Integer(),
  }),
  broadcast: Type.Object({ jobId: Type.String(), campaignId: Type.String() }),
  job: Type.Object({ jobId: Type.String() }),
  templateUse: Type.Object({ campaigns: Type.Array(Type.String()) }),
  campaignAbTests: Type.Array(CampaignAbTestSchema),
  campaignAbTest: CampaignAbTestSchema,
  abTests: Paginated(AbTestSchema),
  abTest: AbTestSchema,
};
