import { pageParams } from "../../lib/pagination";

const wsId = { type: "string", min: 1, max: 64 } as const;
const ruleId = { type: "string", min: 1, max: 64 } as const;
const count = { type: "number", integer: true, min: 1, max: 1_000_000 } as const;
/** `where` is checked by the segments filter language (with the path of the bad node). */
const where = { type: "array", max: 50, items: "any", nullable: true } as const;
/** A filter group of the segments language, checked by filter-schema.ts (with the path of the bad node). */
const condition = { type: "object" } as const;
const decay = {
  type: "object",
  nullable: true,
  strict: "remove",
  props: { days: { type: "number", integer: true, min: 1, max: 3650 } },
} as const;
const periodCap = {
  type: "object",
  nullable: true,
  strict: "remove",
  props: { max: count, days: { type: "number", integer: true, min: 1, max: 3650 } },
} as const;

export const schemas = {
  list: { $$strict: "remove", workspaceId: wsId, ...pageParams },
  get: { $$strict: "remove", workspaceId: wsId, ruleId },
  create: {
    $$strict: "remove",
    workspaceId: wsId,
    name: { type: "string", min: 1, max: 200, trim: true },
    // Exactly one of eventType and condition (checked by the repo, 400 naming the field).
    eventType: { type: "string", min: 1, max: 200, optional: true },
    condition: { ...condition, optional: true },
    where: { ...where, optional: true },
    points: { type: "number", integer: true, min: -1_000_000, max: 1_000_000 },
    maxPerContact: { ...count, optional: true, nullable: true },
    periodCap: { ...periodCap, optional: true },
    decay: { ...decay, optional: true },
    active: { type: "boolean", optional: true },
  },
  update: {
    $$strict: "remove",
    workspaceId: wsId,
    ruleId,
    name: { type: "string", min: 1, max: 200, trim: true, optional: true },
    eventType: { type: "string", min: 1, max: 200, optional: true },
    condition: { ...condition, optional: true },
    where: { ...where, optional: true },
    points: { type: "number", integer: true, min: -1_000_000, max: 1_000_000, optional: true },
    maxPerContact: { ...count, optional: true, nullable: true },
    periodCap: { ...periodCap, optional: true },
    decay: { ...decay, optional: true },
    active: { type: "boolean", optional: true },
  },
  recalculate: { $$strict: "remove", workspaceId: wsId },
  scores: {
    $$strict: "remove",
    workspaceId: wsId,
    contactId: { type: "string", min: 1, max: 64 },
    limit: { type: "number", integer: true, positive: true, convert: true, optional: true },
  },
  adjust: {
    $$strict: "remove",
    workspaceId: wsId,
    contactId: { type: "string", min: 1, max: 64 },
    points: { type: "number", integer: true, min: -1_000_000, max: 1_000_000, notEqual: 0 },
    reason: { type: "string", max: 500, optional: true, nullable: true },
  },
  applyContactRules: { contactIds: { type: "array", items: "string", max: 100_000 } },
  applyEvent: {
    eventId: { type: "string", min: 1, max: 64 },
    contactId: { type: "string", min: 1, max: 64 },
    type: { type: "string", min: 1, max: 200 },
    metadata: { type: "object", optional: true, nullable: true },
    timestamp: [
      { type: "date", convert: true, optional: true },
      { type: "string", optional: true },
    ],
  },
} as const;
