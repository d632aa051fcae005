import type { JsonSchema } from "../../lib/openapi";

/** Response shapes of the CRM routes for the OpenAPI description (requests come from the params schemas). */

const str = { type: "string" } as const;
const nstr = { type: ["string", "null"] } as const;
const time = { type: "string", format: "date-time" } as const;
const ntime = { type: ["string", "null"], format: "date-time" } as const;
const bool = { type: "boolean" } as const;
const int = { type: "integer" } as const;
const obj = (properties: Record<string, unknown>): JsonSchema => ({
  type: "object",
  properties,
  required: Object.keys(properties),
});
const amounts = {
  type: "object",
  additionalProperties: { type: "number" },
  description: 'Money per ISO 4217 currency, e.g. {"USD": 1200.5}',
};

export const CompanySchema = obj({
  id: str,
  name: str,
  domain: { ...nstr, description: "Lower-cased host name, unique in the workspace" },
  website: nstr,
  industry: nstr,
  employeeCount: { type: ["integer", "null"] },
  annualRevenue: { type: ["number", "null"] },
  currency: { ...nstr, description: "ISO 4217" },
  phone: nstr,
  description: nstr,
  address: obj({
    street: str,
    city: str,
    region: str,
    postalCode: str,
    country: { ...str, description: "ISO 3166-1 alpha-2" },
  }),
  ownerId: { ...nstr, description: "User id of a member" },
  tags: { type: "array", items: str },
  attributes: { type: "object" },
  createdBy: nstr,
  createdAt: time,
  updatedAt: time,
});
(CompanySchema.properties as Record<string, JsonSchema>).address.required = [];

const Stage = obj({
  id: str,
  name: str,
  position: int,
  probability: { type: ["integer", "null"], minimum: 0, maximum: 100 },
  won: bool,
  lost: bool,
});
export const PipelineSchema = obj({
  id: str,
  name: str,
  isDefault: bool,
  stages: { type: "array", items: Stage },
  createdAt: time,
  updatedAt: time,
});

const DealFields = {
  id: str,
  title: str,
  value: { type: "number", minimum: 0 },
  currency: { ...str, description: "ISO 4217" },
  pipelineId: str,
  stageId: str,
  status: {
    enum: ["open", "won", "lost"],
    description: "Follows the stage: a won or lost stage closes the deal",
  },
  contactId: nstr,
  companyId: nstr,
  ownerId: nstr,
  expectedCloseDate: { ...nstr, format: "date" },
  closedAt: ntime,
  lostReason: nstr,
  description: nstr,
  tags: { type: "array", items: str },
  attributes: { type: "object" },
  stageChangedAt: time,
  createdBy: nstr,
  createdAt: time,
  updatedAt: time,
};
export const DealSchema = obj(DealFields);
export const DealWithHistorySchema = obj({
  ...DealFields,
  stageHistory: {
    type: "array",
    items: obj({
      id: str,
      fromStageId: nstr,
      toStageId: str,
      fromStatus: nstr,
      toStatus: str,
      changedBy: nstr,
      changedAt: time,
    }),
  },
});
const Bucket = obj({ count: int, value: amounts });
export const DealStatsSchema = obj({
  pipelines: {
    type: "array",
    items: obj({
      id: str,
      name: str,
      isDefault: bool,
      stages: {
        type: "array",
        items: obj({ ...(Stage.properties as object), count: int, value: amounts, weightedValue: amounts }),
      },
    }),
  },
  totals: obj({ open: Bucket, won: Bucket, lost: Bucket, all: obj({ count: int }) }),
  winRate: { type: ["number", "null"], description: "won / (won + lost)" },
});

export const TaskSchema = obj({
  id: str,
  title: str,
  description: nstr,
  type: { enum: ["todo", "call", "email", "meeting", "follow_up", "deadline"] },
  priority: { enum: ["low", "normal", "high", "urgent"] },
  status: { enum: ["open", "completed"] },
  overdue: bool,
  dueAt: ntime,
  assigneeId: nstr,
  contactId: nstr,
  companyId: nstr,
  dealId: nstr,
  completedAt: ntime,
  completedBy: nstr,
  createdBy: nstr,
  createdAt: time,
  updatedAt: time,
});

export const NotificationSchema = obj({
  id: str,
  type: { ...str, description: "task.assigned, task.due" },
  title: str,
  body: nstr,
  resource: { type: ["object", "null"], properties: { type: str, id: str } },
  data: { type: "object" },
  read: bool,
  readAt: ntime,
  createdAt: time,
});

export const SavedViewSchema = obj({
  id: str,
  name: str,
  resource: str,
  filters: { type: "object", description: "The list's query parameters, as the client uses them" },
  sort: nstr,
  columns: { type: "array", items: str },
  shared: bool,
  ownerId: str,
  mine: bool,
  createdAt: time,
  updatedAt: time,
});

export const WidgetSchema = obj({
  id: str,
  type: str,
  title: str,
  config: { type: "object" },
  position: obj({ x: int, y: int, w: int, h: int }),
  createdAt: time,
  updatedAt: time,
});

export const ActivitySchema = obj({
  id: str,
  type: { ...str, description: "The audit action, e.g. deal.stage_changed" },
  actor: obj({ type: { enum: ["user", "api_key", "system"] }, id: nstr, name: nstr }),
  target: { type: ["object", "null"], properties: { type: str, id: nstr } },
  metadata: { type: "object" },
  createdAt: time,
});

export const SearchResultSchema = obj({
  query: str,
  data: {
    type: "array",
    items: obj({
      type: { ...str, description: "contacts, companies, deals (campaigns, templates later)" },
      id: str,
      title: str,
      subtitle: nstr,
      score: { type: "number" },
      updatedAt: time,
    }),
  },
  totals: { type: "object", additionalProperties: int, description: "Matches per searched type" },
});

export const SuccessSchema = obj({ success: { const: true } });

const ERROR = { $ref: "#/components/responses/Error" };
const PAGINATION = obj({ page: int, limit: int, total: int, totalPages: int });

/**
 * `{ 200|201: schema, 4XX: error }` for an action's `openapi.responses`. A
 * deep copy each time: the registry's serialiser drops any object it has
 * already met, so a shape used twice would vanish from the description.
 */
export function answers(schema: JsonSchema, status = 200) {
  const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value));
  return {
    [String(status)]: { description: "Success", content: { "application/json": { schema: copy(schema) } } },
    "4XX": copy(ERROR),
  };
}
export const listOf = (schema: JsonSchema): JsonSchema => ({ type: "array", items: schema });
export const pageOf = (schema: JsonSchema, extra: Record<string, unknown> = {}): JsonSchema =>
  obj({ data: listOf(schema), pagination: PAGINATION, ...extra });
