import { pageParams } from "../../lib/pagination";

/** Params schemas of every CRM action (they also feed the OpenAPI description). */

const wsId = { type: "string", min: 1, max: 64 } as const;
const idRule = { type: "string", min: 1, max: 64 } as const;
const optionalId = { type: "string", min: 1, max: 64, optional: true } as const;
const nullableId = { type: "string", min: 1, max: 64, optional: true, nullable: true } as const;
const optionalText = (max: number) =>
  ({ type: "string", max, trim: true, optional: true, nullable: true }) as const;
const currency = {
  type: "string",
  trim: true,
  uppercase: true,
  pattern: /^[A-Z]{3}$/,
  optional: true,
  messages: { stringPattern: "must be an ISO 4217 code such as USD" },
} as const;
const calendarDate = {
  type: "string",
  pattern: /^\d{4}-\d{2}-\d{2}$/,
  optional: true,
  nullable: true,
  messages: { stringPattern: "must be a date as YYYY-MM-DD" },
} as const;
const tags = {
  type: "array",
  items: { type: "string", min: 1, max: 100, trim: true },
  max: 100,
  optional: true,
} as const;
const attributes = { type: "object", optional: true } as const;
const queryDate = { type: "date", convert: true, optional: true } as const;
const queryDay = {
  type: "string",
  pattern: /^\d{4}-\d{2}-\d{2}$/,
  optional: true,
  messages: { stringPattern: "must be a date as YYYY-MM-DD" },
} as const;
const queryNumber = { type: "number", convert: true, optional: true } as const;
const queryBool = { type: "boolean", convert: true, optional: true } as const;
const search = { type: "string", max: 200, trim: true, optional: true } as const;
const sort = { type: "string", max: 50, optional: true } as const;
const list = { $$strict: "remove", workspaceId: wsId, ...pageParams, search, sort } as const;
const one = (key: string) => ({ $$strict: "remove", workspaceId: wsId, [key]: idRule }) as const;

const address = {
  type: "object",
  optional: true,
  strict: "remove",
  props: {
    street: optionalText(200),
    city: optionalText(100),
    region: optionalText(100),
    postalCode: optionalText(20),
    country: {
      type: "string",
      trim: true,
      uppercase: true,
      pattern: /^[A-Z]{2}$/,
      optional: true,
      nullable: true,
      messages: { stringPattern: "must be an ISO 3166-1 alpha-2 code such as DE" },
    },
  },
} as const;

const companyFields = {
  domain: optionalText(255),
  website: { type: "url", max: 500, optional: true, nullable: true },
  industry: optionalText(100),
  employeeCount: { type: "number", integer: true, min: 0, max: 10_000_000, optional: true, nullable: true },
  annualRevenue: { type: "number", min: 0, max: 1e15, optional: true, nullable: true },
  currency: { ...currency, nullable: true },
  phone: optionalText(50),
  description: optionalText(10_000),
  address,
  ownerId: nullableId,
  tags,
  attributes,
} as const;

const stage = {
  type: "object",
  strict: "remove",
  props: {
    id: optionalId,
    name: { type: "string", min: 1, max: 100, trim: true },
    probability: { type: "number", integer: true, min: 0, max: 100, optional: true, nullable: true },
    won: { type: "boolean", optional: true },
    lost: { type: "boolean", optional: true },
  },
} as const;
const stages = { type: "array", items: stage, min: 1, max: 50 } as const;

const dealFields = {
  value: { type: "number", min: 0, max: 1e13, optional: true },
  currency,
  contactId: nullableId,
  companyId: nullableId,
  ownerId: nullableId,
  expectedCloseDate: calendarDate,
  lostReason: optionalText(500),
  description: optionalText(10_000),
  tags,
  attributes,
} as const;

export const TASK_TYPES = ["todo", "call", "email", "meeting", "follow_up", "deadline"] as const;
export const TASK_PRIORITIES = ["low", "normal", "high", "urgent"] as const;
const taskFields = {
  description: optionalText(10_000),
  type: { type: "enum", values: TASK_TYPES, optional: true },
  priority: { type: "enum", values: TASK_PRIORITIES, optional: true },
  dueAt: { type: "date", convert: true, optional: true, nullable: true },
  assigneeId: nullableId,
  contactId: nullableId,
  companyId: nullableId,
  dealId: nullableId,
} as const;

export const VIEW_RESOURCES = ["contacts", "companies", "deals", "tasks", "segments", "campaigns"] as const;
export const WIDGET_TYPES = [
  "deals_by_stage",
  "deals_won_lost",
  "pipeline_value",
  "tasks_due",
  "recent_activity",
  "contacts_total",
  "contacts_growth",
  "saved_view",
  "metric",
] as const;
export const SEARCH_TYPES = ["contacts", "companies", "deals"] as const;

const position = {
  type: "object",
  optional: true,
  strict: "remove",
  props: {
    x: { type: "number", integer: true, min: 0, max: 100 },
    y: { type: "number", integer: true, min: 0, max: 1000 },
    w: { type: "number", integer: true, min: 1, max: 12 },
    h: { type: "number", integer: true, min: 1, max: 50 },
  },
} as const;

export const schemas = {
  companies: {
    list: {
      ...list,
      industry: { type: "string", max: 100, optional: true },
      ownerId: optionalId,
      tag: { type: "string", max: 100, optional: true },
      domain: { type: "string", max: 255, optional: true },
      country: { type: "string", max: 2, optional: true },
      createdFrom: queryDate,
      createdTo: queryDate,
    },
    create: {
      $$strict: "remove",
      workspaceId: wsId,
      name: { type: "string", min: 1, max: 200, trim: true },
      ...companyFields,
    },
    update: {
      $$strict: "remove",
      workspaceId: wsId,
      companyId: idRule,
      name: { type: "string", min: 1, max: 200, trim: true, optional: true },
      ...companyFields,
    },
    remove: one("companyId"),
  },
  pipelines: {
    list: { $$strict: "remove", workspaceId: wsId },
    get: one("pipelineId"),
    create: {
      $$strict: "remove",
      workspaceId: wsId,
      name: { type: "string", min: 1, max: 100, trim: true },
      stages,
      isDefault: { type: "boolean", optional: true },
    },
    update: {
      $$strict: "remove",
      workspaceId: wsId,
      pipelineId: idRule,
      name: { type: "string", min: 1, max: 100, trim: true, optional: true },
      stages: { ...stages, optional: true },
      isDefault: {
        type: "enum",
        values: [true],
        optional: true,
        messages: { enumValue: "can only be set to true (make another pipeline the default instead)" },
      },
    },
    remove: one("pipelineId"),
  },
  deals: {
    list: {
      ...list,
      pipelineId: optionalId,
      stageId: optionalId,
      status: { type: "enum", values: ["open", "won", "lost"], optional: true },
      ownerId: optionalId,
      contactId: optionalId,
      companyId: optionalId,
      currency,
      tag: { type: "string", max: 100, optional: true },
      minValue: queryNumber,
      maxValue: queryNumber,
      expectedCloseFrom: queryDay,
      expectedCloseTo: queryDay,
      createdFrom: queryDate,
      createdTo: queryDate,
    },
    get: one("dealId"),
    create: {
      $$strict: "remove",
      workspaceId: wsId,
      title: { type: "string", min: 1, max: 200, trim: true },
      pipelineId: optionalId,
      stageId: optionalId,
      ...dealFields,
    },
    update: {
      $$strict: "remove",
      workspaceId: wsId,
      dealId: idRule,
      title: { type: "string", min: 1, max: 200, trim: true, optional: true },
      ...dealFields,
    },
    moveStage: {
      $$strict: "remove",
      workspaceId: wsId,
      dealId: idRule,
      stageId: idRule,
      lostReason: optionalText(500),
    },
    remove: one("dealId"),
    stats: {
      $$strict: "remove",
      workspaceId: wsId,
      pipelineId: optionalId,
      ownerId: optionalId,
      createdFrom: queryDate,
      createdTo: queryDate,
    },
  },
  tasks: {
    list: {
      ...list,
      status: { type: "enum", values: ["open", "completed", "overdue"], optional: true },
      assigneeId: optionalId,
      contactId: optionalId,
      companyId: optionalId,
      dealId: optionalId,
      type: { type: "enum", values: TASK_TYPES, optional: true },
      priority: { type: "enum", values: TASK_PRIORITIES, optional: true },
      dueFrom: queryDate,
      dueTo: queryDate,
    },
    get: one("taskId"),
    create: {
      $$strict: "remove",
      workspaceId: wsId,
      title: { type: "string", min: 1, max: 300, trim: true },
      ...taskFields,
    },
    update: {
      $$strict: "remove",
      workspaceId: wsId,
      taskId: idRule,
      title: { type: "string", min: 1, max: 300, trim: true, optional: true },
      ...taskFields,
    },
    complete: {
      $$strict: "remove",
      workspaceId: wsId,
      taskId: idRule,
      completed: { type: "boolean", optional: true },
    },
    remove: one("taskId"),
  },
  notifications: {
    list: {
      $$strict: "remove",
      workspaceId: wsId,
      ...pageParams,
      unread: queryBool,
      type: { type: "string", max: 100, optional: true },
    },
    update: { $$strict: "remove", workspaceId: wsId, notificationId: idRule, read: { type: "boolean" } },
    remove: one("notificationId"),
    markAllRead: { $$strict: "remove", workspaceId: wsId },
  },
  savedViews: {
    list: {
      $$strict: "remove",
      workspaceId: wsId,
      resource: { type: "enum", values: VIEW_RESOURCES, optional: true },
    },
    create: {
      $$strict: "remove",
      workspaceId: wsId,
      name: { type: "string", min: 1, max: 100, trim: true },
      resource: { type: "enum", values: VIEW_RESOURCES },
      filters: { type: "object", optional: true },
      sort: { type: "string", max: 50, optional: true, nullable: true },
      columns: { type: "array", items: { type: "string", min: 1, max: 100 }, max: 100, optional: true },
      shared: { type: "boolean", optional: true },
    },
    update: {
      $$strict: "remove",
      workspaceId: wsId,
      viewId: idRule,
      name: { type: "string", min: 1, max: 100, trim: true, optional: true },
      filters: { type: "object", optional: true },
      sort: { type: "string", max: 50, optional: true, nullable: true },
      columns: { type: "array", items: { type: "string", min: 1, max: 100 }, max: 100, optional: true },
      shared: { type: "boolean", optional: true },
    },
    remove: one("viewId"),
  },
  widgets: {
    list: { $$strict: "remove", workspaceId: wsId },
    create: {
      $$strict: "remove",
      workspaceId: wsId,
      type: { type: "enum", values: WIDGET_TYPES },
      title: { type: "string", min: 1, max: 100, trim: true, optional: true },
      config: { type: "object", optional: true },
      position,
    },
  },
  activity: {
    $$strict: "remove",
    workspaceId: wsId,
    ...pageParams,
    type: { type: "string", max: 100, optional: true },
    targetType: { type: "string", max: 50, optional: true },
    targetId: optionalId,
    actorId: optionalId,
    from: queryDate,
    to: queryDate,
  },
  search: {
    $$strict: "remove",
    workspaceId: wsId,
    q: { type: "string", min: 1, max: 200, trim: true },
    types: { type: "string", max: 200, optional: true },
    limit: { type: "number", integer: true, positive: true, convert: true, optional: true },
  },
} as const;
