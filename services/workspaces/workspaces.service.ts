import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { audit } from "../../lib/audit";
import { defineAction, defineService, type ServiceThis } from "../../lib/define-service";
import { forbidden, found, notFound, unauthorized } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { Nullable } from "../../lib/schema";
import { asWorkspaceId, userOf, WORKSPACE_DELETED_EVENT, workspaceOf } from "../../lib/tenancy";
import { forgetRoles, MEMBERSHIP_CHANGED_EVENT } from "../../mixins/authorize.middleware";
import { DatabaseMixin } from "../../mixins/database.mixin";
import type { Role } from "../../models";
import { checkSettings } from "./settings";
import * as repo from "./workspaces.repo";
import { MemberSchema, RoleSchema, SuccessSchema, WorkspaceSchema, schemas } from "./workspaces.schemas";
import { readRetry } from "../../lib/resilience";

const membersManage = requires("members.manage");
const settingsManage = requires("settings.manage");
const sessionSettingsManage = requires("settings.manage", { auth: "session" });

/** Workspaces, members and roles, and the audit log every area writes to. */
/** The workspaces service's `this`: the membership cache's reset and the OWNER rule. */
type WorkspacesService = ServiceThis<{
  forgetMemberships(): Promise<void>;
  refuseOwnerChangeByAdmin(ctx: AppContext, memberId: string | null, role: Role | null): Promise<void>;
}>;

export default defineService<WorkspacesService>({
  name: "workspaces",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** The caller's workspaces, each with the caller's role. Session only. */
    list: defineAction({
      rest: "GET /workspaces",
      openapi: { tags: ["Workspaces"], summary: "List the workspaces you are a member of" },
      auth: "session",
      result: Type.Array(WorkspaceSchema),
      handler: (ctx) => repo.listForUser(userOf(ctx)),
    }),

    /** Create a workspace; the caller becomes its OWNER. Session only. */
    create: defineAction({
      rest: "POST /workspaces",
      openapi: { tags: ["Workspaces"], summary: "Create a workspace (you become its OWNER)" },
      auth: "session",
      params: schemas.create,
      status: 201,
      result: WorkspaceSchema,
      async handler(ctx) {
        const workspace = await repo.createWorkspace(userOf(ctx), ctx.params.name, ctx.params.slug);
        ctx.meta.workspaceId = asWorkspaceId(workspace.id);
        await audit(
          ctx,
          "workspace.created",
          { type: "workspace", id: workspace.id },
          { name: workspace.name },
        );
        return workspace;
      },
    }),

    /** One workspace with the caller's role. Any member or key of it. */
    get: defineAction({
      rest: "GET /workspaces/:workspaceId",
      openapi: { tags: ["Workspaces"], summary: "Get a workspace" },
      auth: "any",
      params: schemas.get,
      result: WorkspaceSchema,
      retryPolicy: readRetry(),
      handler: async (ctx) => found(await repo.getWorkspace(workspaceOf(ctx), ctx.meta.role), "Workspace"),
    }),

    /** Rename, change slug or merge settings. Needs settings.manage. */
    update: defineAction({
      rest: "PATCH /workspaces/:workspaceId",
      openapi: { tags: ["Workspaces"], summary: "Update a workspace's name or settings" },
      ...settingsManage,
      params: schemas.update,
      result: WorkspaceSchema,
      async handler(ctx) {
        const { workspaceId: _path, ...changes } = ctx.params; // the workspace comes from ctx.meta
        if (changes.settings) changes.settings = checkSettings(changes.settings);
        const workspace = found(await repo.updateWorkspace(workspaceOf(ctx), changes), "Workspace");
        await audit(
          ctx,
          "workspace.updated",
          { type: "workspace", id: workspace.id },
          { fields: Object.keys(changes).filter((k) => changes[k as keyof typeof changes] !== undefined) },
        );
        return { ...workspace, role: ctx.meta.role };
      },
    }),

    /** Delete the workspace and everything in it. OWNER only. */
    remove: defineAction({
      rest: "DELETE /workspaces/:workspaceId",
      openapi: { tags: ["Workspaces"], summary: "Delete a workspace and everything in it" },
      auth: "session",
      role: "ADMIN",
      params: schemas.get,
      result: SuccessSchema,
      async handler(this: WorkspacesService, ctx) {
        if (ctx.meta.role !== "OWNER") throw forbidden("Only an OWNER can delete the workspace");
        const workspaceId = workspaceOf(ctx);
        if (!(await repo.deleteWorkspace(workspaceId))) throw notFound("Workspace");
        await this.forgetMemberships();
        // Its API keys went with it (ON DELETE CASCADE); the auth service forgets their cached verifications.
        await this.broker.broadcast(WORKSPACE_DELETED_EVENT, { workspaceId });
        return { success: true as const };
      },
    }),

    /** Members with their user. Any member of the workspace, or an API key with members.manage. */
    listMembers: defineAction({
      rest: "GET /workspaces/:workspaceId/members",
      openapi: { tags: ["Members"], summary: "List the workspace's members" },
      auth: "any",
      keyScope: "members.manage",
      params: schemas.get,
      result: Type.Array(MemberSchema),
      handler: (ctx) => repo.listMembers(workspaceOf(ctx)),
    }),

    /** Add a registered user by email. members.manage (a session's role or an API key's scopes); OWNER only by an OWNER. */
    addMember: defineAction({
      rest: "POST /workspaces/:workspaceId/members",
      openapi: { tags: ["Members"], summary: "Add a member by email, with a role" },
      ...membersManage,
      params: schemas.addMember,
      status: 201,
      result: MemberSchema,
      async handler(this: WorkspacesService, ctx) {
        await this.refuseOwnerChangeByAdmin(ctx, null, ctx.params.role);
        const member = found(
          await repo.addMember(workspaceOf(ctx), ctx.params.email, ctx.params.role),
          "User",
        );
        await audit(
          ctx,
          "member.added",
          { type: "member", id: member.id },
          { userId: member.userId, role: member.role },
        );
        await this.forgetMemberships();
        return member;
      },
    }),

    /** Change a member's role (the last OWNER stays). members.manage; OWNER only by an OWNER. */
    updateMember: defineAction({
      rest: "PATCH /workspaces/:workspaceId/members/:memberId",
      openapi: { tags: ["Members"], summary: "Change a member's role" },
      ...membersManage,
      params: schemas.updateMember,
      result: MemberSchema,
      async handler(this: WorkspacesService, ctx) {
        await this.refuseOwnerChangeByAdmin(ctx, ctx.params.memberId, ctx.params.role);
        const member = found(
          await repo.changeRole(workspaceOf(ctx), ctx.params.memberId, ctx.params.role),
          "Member",
        );
        await audit(
          ctx,
          "member.updated",
          { type: "member", id: ctx.params.memberId },
          { role: ctx.params.role },
        );
        await this.forgetMemberships();
        return member;
      },
    }),

    /** Remove a member (not the last OWNER). members.manage; an OWNER only by an OWNER. */
    removeMember: defineAction({
      rest: "DELETE /workspaces/:workspaceId/members/:memberId",
      openapi: { tags: ["Members"], summary: "Remove a member" },
      ...membersManage,
      params: schemas.removeMember,
      result: SuccessSchema,
      async handler(this: WorkspacesService, ctx) {
        await this.refuseOwnerChangeByAdmin(ctx, ctx.params.memberId, null);
        if (!(await repo.removeMember(workspaceOf(ctx), ctx.params.memberId))) throw notFound("Member");
        await audit(ctx, "member.removed", { type: "member", id: ctx.params.memberId });
        await this.forgetMemberships();
        return { success: true as const };
      },
    }),

    /** The audit log, newest first, filtered by action (prefix with `*`), actor and time. Needs settings.manage. */
    auditLogs: defineAction({
      rest: "GET /workspaces/:workspaceId/audit-logs",
      openapi: {
        tags: ["Audit log"],
        summary: "Audit log of the workspace (filters action, actorId, from, to)",
      },
      ...sessionSettingsManage,
      params: schemas.auditLogs,
      result: schemas.auditLogsResult,
      handler(ctx) {
        const { action, actorId, from, to } = ctx.params;
        return repo.listAudit(
          workspaceOf(ctx),
          { action, actorId, from: from ? new Date(from) : undefined, to: to ? new Date(to) : undefined },
          pageRequest(ctx.params),
        );
      },
    }),

    /** Internal (retention): merge settings keys into the workspace's, checked as PATCH checks them; the caller audits. */
    mergeSettings: defineAction({
      params: schemas.mergeSettings,
      async handler(ctx) {
        found(
          await repo.updateWorkspace(workspaceOf(ctx), { settings: checkSettings(ctx.params.settings) }),
          "Workspace",
        );
      },
    }),

    /** Internal: the role of a user in a workspace, or null. Cached; cleared on every member change. */
    membership: defineAction({
      params: schemas.membership,
      result: Nullable(RoleSchema),
      cache: { keys: ["workspaceId", "userId"], ttl: 60 },
      retryPolicy: readRetry(),
      handler: (ctx) => repo.membershipRole(ctx.params.workspaceId, ctx.params.userId),
    }),

    /** Internal: which of `userIds` are members of the workspace (owners and assignees named by other areas). */
    memberUserIds: defineAction({
      params: schemas.memberUserIds,
      result: Type.Array(Type.String()),
      handler: (ctx) => repo.memberUserIds(ctx.params.workspaceId, ctx.params.userIds),
    }),

    /** Internal (the website script): the workspace a public `siteKey` names and its allowed origins; 401 when none. */
    bySiteKey: defineAction({
      params: schemas.bySiteKey,
      result: Type.Object({ workspaceId: Type.String(), allowedOrigins: Type.Array(Type.String()) }),
      async handler(ctx) {
        const site = await repo.bySiteKey(ctx.params.siteKey);
        if (!site) throw unauthorized("Unknown site key");
        return site;
      },
    }),

    /** Internal (forms, website script): browser origins `allowedOrigins` refused, noted in the workspace. */
    noteRefusedOrigins: defineAction({
      params: schemas.noteRefusedOrigins,
      handler: (ctx) => repo.noteRefusedOrigins(ctx.params.workspaceId, ctx.params.refused),
    }),

    /** Internal: write one audit entry (see lib/audit.ts). */
    recordAudit: defineAction({
      params: schemas.recordAudit,
      handler: (ctx) => repo.recordAudit(ctx.params),
    }),
  },

  events: {
    [MEMBERSHIP_CHANGED_EVENT]() {
      return this.broker.cacher?.clean("workspaces.membership:**");
    },
  },

  methods: {
    /** Membership changes take effect at once: clear here (the cacher and this process's roles), and tell every other node. */
    async forgetMemberships() {
      await this.broker.cacher?.clean("workspaces.membership:**");
      forgetRoles();
      this.broker.broadcast(MEMBERSHIP_CHANGED_EVENT);
    },

    /** An ADMIN or an API key may not grant OWNER, nor change or remove an OWNER; only an OWNER's session may. */
    async refuseOwnerChangeByAdmin(ctx: AppContext, memberId: string | null, role: Role | null) {
      if (ctx.meta.role === "OWNER") return;
      const targetRole = memberId === null ? null : await repo.memberRole(workspaceOf(ctx), memberId);
      if (role === "OWNER" || targetRole === "OWNER") {
        throw forbidden("Only an OWNER can change an OWNER's membership or grant OWNER");
      }
    },
  },
});
