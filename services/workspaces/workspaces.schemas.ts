import { Type } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import {
  Component,
  DateTime,
  Nullable,
  Params,
  StringEnum,
  Trimmed,
  WorkspaceIdParam,
} from "../../lib/schema";
import { SettingsSchema as Settings } from "./settings";

export const RoleSchema = StringEnum(["OWNER", "ADMIN", "MEMBER", "VIEWER"], {
  description: "OWNER > ADMIN > MEMBER > VIEWER",
});
const Slug = Type.String({ minLength: 2, maxLength: 64, pattern: "^[a-z0-9]+(?:-[a-z0-9]+)*$" });
const MemberId = Type.String({ minLength: 1, maxLength: 64 });

/** A browser origin the workspace's allowedOrigins refused. */
const RefusedOriginSchema = Type.Object({
  origin: Type.String({ maxLength: 200 }),
  count: Type.Integer({ minimum: 1, description: "Requests refused (recorded within seconds)" }),
  lastAt: DateTime(),
});

/** A workspace, with the caller's role where the answer is for a member. */
export const WorkspaceSchema = Component(
  "Workspace",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    slug: Type.String(),
    siteKey: Type.String({ description: "Public key of the website script (`?key=`), read-only" }),
    settings: Settings,
    refusedOrigins: Type.Array(RefusedOriginSchema, {
      description:
        "The last browser origins (at most 10, most recent first) whose forms or website script requests `settings.allowedOrigins` refused, read-only",
    }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
    role: Type.Optional(RoleSchema),
  }),
);

export const MemberSchema = Component(
  "Member",
  Type.Object({
    id: Type.String(),
    userId: Type.String(),
    role: RoleSchema,
    createdAt: DateTime(),
    user: Type.Object({ id: Type.String(), name: Type.String(), email: Type.String() }),
  }),
);

export const AuditEntrySchema = Component(
  "AuditEntry",
  Type.Object({
    id: Type.String(),
    workspaceId: Type.String(),
    actorType: Type.String({ description: "user, api_key or system" }),
    actorId: Nullable(Type.String()),
    action: Type.String({ description: "e.g. workspace.updated, member.added, api_key.revoked" }),
    targetType: Nullable(Type.String()),
    targetId: Nullable(Type.String()),
    ip: Nullable(Type.String()),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    createdAt: DateTime(),
  }),
);

/** A time filter: a date (midnight UTC) or a date-time. */
const Moment = Type.Union([Type.String({ format: "date-time" }), Type.String({ format: "date" })]);

export const SuccessSchema = Type.Object({ success: Type.Literal(true) });

export const schemas = {
  create: Params({ name: Trimmed({ minLength: 1, maxLength: 100 }), slug: Type.Optional(Slug) }),
  get: Params({ workspaceId: WorkspaceIdParam }),
  update: Params({
    workspaceId: WorkspaceIdParam,
    name: Type.Optional(Trimmed({ minLength: 1, maxLength: 100 })),
    slug: Type.Optional(Slug),
    settings: Type.Optional(Settings),
  }),
  addMember: Params({
    workspaceId: WorkspaceIdParam,
    email: Type.String({ format: "email", maxLength: 254 }),
    role: RoleSchema,
  }),
  mergeSettings: Params({ settings: Settings }),
  updateMember: Params({ workspaceId: WorkspaceIdParam, memberId: MemberId, role: RoleSchema }),
  removeMember: Params({ workspaceId: WorkspaceIdParam, memberId: MemberId }),
  auditLogs: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    action: Type.Optional(
      Type.String({ maxLength: 100, description: "Exact action, or a prefix ending in `*` (`member.*`)" }),
    ),
    actorId: Type.Optional(Type.String({ maxLength: 64 })),
    from: Type.Optional(Moment),
    to: Type.Optional(Moment),
  }),
  auditLogsResult: Paginated(AuditEntrySchema),
  membership: Params({ workspaceId: WorkspaceIdParam, userId: Type.String() }),
  bySiteKey: Params({ siteKey: Type.String({ minLength: 1, maxLength: 100 }) }),
  noteRefusedOrigins: Params({
    workspaceId: WorkspaceIdParam,
    refused: Type.Array(RefusedOriginSchema, { maxItems: 10 }),
  }),
  memberUserIds: Params({
    workspaceId: WorkspaceIdParam,
    userIds: Type.Array(Type.String({ maxLength: 255 }), { maxItems: 1000 }),
  }),
  recordAudit: Params({
    workspaceId: WorkspaceIdParam,
    actorType: Type.String(),
    actorId: Type.Optional(Nullable(Type.String())),
    action: Type.String(),
    targetType: Type.Optional(Nullable(Type.String())),
    targetId: Type.Optional(Nullable(Type.String())),
    ip: Type.Optional(Nullable(Type.String())),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
};
