import { pageParams } from "../../lib/pagination";

const wsId = { type: "string", min: 1, max: 64 } as const;
const segmentId = { type: "string", min: 1, max: 64 } as const;
const contactIds = { type: "array", items: { type: "string", min: 1, max: 64 }, min: 1, max: 1000 } as const;
/** The filter's own language is checked by filter-schema.ts (with the path of the bad node). */
const filter = { type: "object" } as const;

export const schemas = {
  list: {
    $$strict: "remove",
    workspaceId: wsId,
    ...pageParams,
    type: { type: "enum", values: ["dynamic", "static"], optional: true },
  },
  get: { $$strict: "remove", workspaceId: wsId, segmentId },
  create: {
    $$strict: "remove",
    workspaceId: wsId,
    name: { type: "string", min: 1, max: 200, trim: true },
    description: { type: "string", max: 2000, optional: true, nullable: true },
    type: { type: "enum", values: ["dynamic", "static"], optional: true, default: "dynamic" },
    filter: { ...filter, optional: true },
    contactIds: { ...contactIds, optional: true },
  },
  update: {
    $$strict: "remove",
    workspaceId: wsId,
    segmentId,
    name: { type: "string", min: 1, max: 200, trim: true, optional: true },
    description: { type: "string", max: 2000, optional: true, nullable: true },
    filter: { ...filter, optional: true },
  },
  growth: {
    $$strict: "remove",
    workspaceId: wsId,
    segmentId,
    from: { type: "date", convert: true, optional: true },
    to: { type: "date", convert: true, optional: true },
    days: { type: "number", integer: true, min: 1, max: 366, convert: true, optional: true },
  },
  members: { $$strict: "remove", workspaceId: wsId, segmentId, ...pageParams },
  addMembers: { $$strict: "remove", workspaceId: wsId, segmentId, contactIds },
  removeMembers: {
    $$strict: "remove",
    workspaceId: wsId,
    segmentId,
    // Body `{contactIds: [...]}` or query `?contactIds=a,b`.
    contactIds: [contactIds, { type: "string", min: 1, max: 65_000 }],
  },
  preview: { $$strict: "remove", workspaceId: wsId, filter },
  evaluateContact: {
    contactId: { type: "string", min: 1, max: 64 },
    eventId: { type: "string", max: 64, optional: true },
    eventType: { type: "string", max: 200, optional: true },
    scoreChanged: { type: "boolean", optional: true },
  },
  evaluateContacts: {
    contactIds: { type: "array", items: "string", max: 100_000 },
    scoreChanged: { type: "boolean", optional: true },
  },
} as const;
