import { pageParams } from "../../lib/pagination";

export const ROLE_RULE = { type: "enum", values: ["OWNER", "ADMIN", "MEMBER", "VIEWER"] } as const;
const SLUG_RULE = {
  type: "string",
  min: 2,
  max: 64,
  pattern: /^[a-z0-9]+(?:-[a-z0-9]+)*$/,
  optional: true,
} as const;
const wsId = { type: "string", min: 1, max: 64 } as const;

export const schemas = {
  create: { $$strict: "remove", name: { type: "string", min: 1, max: 100, trim: true }, slug: SLUG_RULE },
  get: { $$strict: "remove", workspaceId: wsId },
  update: {
    $$strict: "remove",
    workspaceId: wsId,
    name: { type: "string", min: 1, max: 100, trim: true, optional: true },
    slug: SLUG_RULE,
    settings: { type: "object", optional: true },
  },
  addMember: { $$strict: "remove", workspaceId: wsId, email: { type: "email", max: 254 }, role: ROLE_RULE },
  updateMember: {
    $$strict: "remove",
    workspaceId: wsId,
    memberId: { type: "string", max: 64 },
    role: ROLE_RULE,
  },
  removeMember: { $$strict: "remove", workspaceId: wsId, memberId: { type: "string", max: 64 } },
  auditLogs: {
    $$strict: "remove",
    workspaceId: wsId,
    ...pageParams,
    action: { type: "string", max: 100, optional: true },
    actorId: { type: "string", max: 64, optional: true },
    from: { type: "date", convert: true, optional: true },
    to: { type: "date", convert: true, optional: true },
  },
  membership: { workspaceId: "string", userId: "string" },
  recordAudit: {
    workspaceId: "string",
    actorType: "string",
    actorId: { type: "string", nullable: true, optional: true },
    action: "string",
    targetType: { type: "string", nullable: true, optional: true },
    targetId: { type: "string", nullable: true, optional: true },
    ip: { type: "string", nullable: true, optional: true },
    metadata: { type: "object", optional: true },
  },
} as const;
