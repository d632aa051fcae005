import type { Transaction } from "sequelize";
import { MicroBatcher } from "../../lib/batcher";
import { Binds, database, likeEscape, query, uniqueViolation } from "../../lib/database";
import { newId } from "../../lib/crypto";
import { conflict, validationError } from "../../lib/errors";
import { selectPage, type PageRequest } from "../../lib/pagination";
import { AuditLog, Member, User, Workspace, type RefusedOrigin, type Role } from "../../models";
import { maskSecrets, openSecrets, sealSecrets } from "./settings";
import { asWorkspaceId, type WorkspaceId } from "../../lib/tenancy";

/** Every query of the workspaces area. Workspace-scoped functions take the workspace id first. */

export interface WorkspaceView {
  id: string;
  name: string;
  slug: string;
  siteKey: string;
  settings: Record<string, unknown>;
  refusedOrigins: RefusedOrigin[];
  createdAt: Date;
  updatedAt: Date;
  role?: Role;
}

/** Refused origins a workspace keeps: the most recent. */
export const REFUSED_ORIGINS_KEPT = 10;

const view = (w: Workspace, role?: Role): WorkspaceView => ({
  id: w.id,
  name: w.name,
  slug: w.slug,
  siteKey: w.siteKey,
  settings: maskSecrets(w.settings),
  refusedOrigins: w.refusedOrigins ?? [],
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
  ...(role ? { role } : {}),
});

export function slugify(name: string): string {
  const base = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48);
  return base || "workspace";
}

export async function membershipRole(workspaceId: WorkspaceId, userId: string): Promise<Role | null> {
  const member = await Member.findOne({ where: { workspaceId, userId }, attributes: ["role"] });
  return member?.role ?? null;
}

/** Which of these users are members of the workspace. */
export async function memberUserIds(workspaceId: WorkspaceId, userIds: string[]): Promise<string[]> {
  const members = await Member.findAll({ where: { workspaceId, userId: userIds }, attributes: ["userId"] });
  return members.map((m) => m.userId);
}

/** The role of one member of the workspace, or null when there is no such member. */
export async function memberRole(workspaceId: WorkspaceId, memberId: string): Promise<Role | null> {
  const member = await Member.findOne({ where: { workspaceId, id: memberId }, attributes: ["role"] });
  return member?.role ?? null;
}

export async function listForUser(userId: string): Promise<WorkspaceView[]> {
  const members = await Member.findAll({
    where: { userId },
    include: [{ model: Workspace, as: "workspace", required: true }],
    order: [
      ["createdAt", "ASC"],
      ["id", "ASC"],
    ],
  });
  return members.map((m) => view(m.workspace as Workspace, m.role));
}

/** Create a workspace with its first OWNER. An explicit slug must be free; a derived one gets a suffix. */
export async function createWorkspace(userId: string, name: string, slug?: string): Promise<WorkspaceView> {
  const sequelize = await database();
  const explicit = slug !== undefined;
  let candidate = explicit ? slug : slugify(name);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    try {
      return await sequelize.transaction(async (transaction: Transaction) => {
        const workspace = await Workspace.create({ id: newId(), name, slug: candidate }, { transaction });
        await Member.create(
          { id: newId(), workspaceId: workspace.id, userId, role: "OWNER" },
          { transaction },
        );
        return view(workspace, "OWNER");
      });
    } catch (err) {
      if (!uniqueViolation(err)) throw err;
      if (explicit) throw conflict(`The slug '${slug}' is taken`);
      candidate = `${slugify(name).slice(0, 40)}-${newId().slice(0, 6)}`;
    }
  }
  throw conflict("Could not find a free slug; pass one explicitly");
}

/**
 * Concurrent reads of workspaces (each send and each inbound message asks
 * for its own) go together: the ids asked while a read runs, in the next
 * statement.
 */
const workspaceReader = new MicroBatcher(
  async (ids: string[]): Promise<Array<Workspace | null>> => {
    const rows = await Workspace.findAll({ where: { id: [...new Set(ids)] } });
    const byId = new Map(rows.map((w) => [w.id, w]));
    return ids.map((id) => byId.get(id) ?? null);
  },
  { maxBatch: 200, lanes: 1 },
);

export async function getWorkspace(workspaceId: WorkspaceId, role?: Role): Promise<WorkspaceView | null> {
  const workspace = await workspaceReader.add(workspaceId);
  // Callers of one batch share the row: each gets its own copy of what it may change.
  return workspace ? structuredClone(view(workspace, role)) : null;
}

/** The workspace of a website script's key, with the origins its settings allow. */
export async function bySiteKey(
  siteKey: string,
): Promise<{ workspaceId: WorkspaceId; allowedOrigins: string[] } | null> {
  const workspace = await Workspace.findOne({ where: { siteKey }, attributes: ["id", "settings"] });
  if (!workspace) return null;
  const origins = workspace.settings?.allowedOrigins;
  return {
    workspaceId: asWorkspaceId(workspace.id),
    allowedOrigins: Array.isArray(origins) ? (origins as string[]) : [],
  };
}

/**
 * Add refusals to the workspace's refused origins in one statement (the row
 * lock orders concurrent ones): counts summed per origin, the last time kept,
 * only the REFUSED_ORIGINS_KEPT most recent origins. `lastAt` is ISO 8601 UTC,
 * so it sorts as text. The workspace's `updatedAt` stays: nobody changed it.
 */
export async function noteRefusedOrigins(
  workspaceId: WorkspaceId,
  refused: Array<Omit<RefusedOrigin, "lastAt"> & { lastAt: string | Date }>,
): Promise<void> {
  await query(
    workspaceId,
    `UPDATE workspaces SET refused_origins = (
       SELECT coalesce(jsonb_agg(kept.entry ORDER BY kept.entry->>'lastAt' DESC), '[]'::jsonb)
       FROM (
         SELECT jsonb_build_object('origin', e->>'origin', 'count', sum((e->>'count')::bigint), 'lastAt', max(e->>'lastAt')) AS entry
         FROM jsonb_array_elements(refused_origins || $2::jsonb) AS e
         GROUP BY e->>'origin'
         ORDER BY max(e->>'lastAt') DESC
         LIMIT $3
       ) AS kept
     )
     WHERE id = $1`,
    [JSON.stringify(refused), REFUSED_ORIGINS_KEPT],
  );
}

/** The settings with their secrets opened, for the service that uses one (never answered to a caller). */
export async function settingsWithSecrets(workspaceId: WorkspaceId): Promise<Record<string, unknown> | null> {
  const workspace = await Workspace.findByPk(workspaceId, { attributes: ["settings"] });
  return workspace ? openSecrets(workspace.settings) : null;
}

export async function updateWorkspace(
  workspaceId: WorkspaceId,
  changes: { name?: string; slug?: string; settings?: Record<string, unknown> },
): Promise<WorkspaceView | null> {
  const workspace = await Workspace.findByPk(workspaceId);
  if (!workspace) return null;
  if (changes.name !== undefined) workspace.name = changes.name;
  if (changes.slug !== undefined) workspace.slug = changes.slug;
  if (changes.settings !== undefined)
    workspace.settings = { ...workspace.settings, ...sealSecrets(changes.settings, workspace.settings) };
  try {
    await workspace.save();
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`The slug '${changes.slug}' is taken`);
    throw err;
  }
  return view(workspace);
}

export async function deleteWorkspace(workspaceId: WorkspaceId): Promise<boolean> {
  return (await Workspace.destroy({ where: { id: workspaceId } })) > 0;
}

export interface MemberView {
  id: string;
  userId: string;
  role: Role;
  createdAt: Date;
  user: { id: string; name: string; email: string };
}

const memberView = (m: Member): MemberView => ({
  id: m.id,
  userId: m.userId,
  role: m.role,
  createdAt: m.createdAt,
  user: { id: m.user!.id, name: m.user!.name, email: m.user!.email },
});

export async function listMembers(workspaceId: WorkspaceId): Promise<MemberView[]> {
  const members = await Member.findAll({
    where: { workspaceId },
    include: [{ model: User, as: "user", required: true }],
    order: [
      ["createdAt", "ASC"],
      ["id", "ASC"],
    ],
  });
  return members.map(memberView);
}

/** Add a registered user; null when no user has this email. */
export async function addMember(
  workspaceId: WorkspaceId,
  email: string,
  role: Role,
): Promise<MemberView | null> {
  const user = await User.findOne({ where: { email: email.trim().toLowerCase() } });
  if (!user) return null;
  try {
    const member = await Member.create({ id: newId(), workspaceId, userId: user.id, role });
    member.user = user;
    return memberView(member);
  } catch (err) {
    if (uniqueViolation(err)) throw conflict("This user is already a member");
    throw err;
  }
}

/**
 * Lock the workspace's owners (two concurrent demotions cannot both pass) and
 * find the member, refusing a change that would leave no OWNER. Null: no such member.
 */
async function memberForChange(
  workspaceId: WorkspaceId,
  memberId: string,
  role: Role | null,
  transaction: Transaction,
): Promise<Member | null> {
  const owners = await Member.findAll({
    where: { workspaceId, role: "OWNER" },
    transaction,
    lock: transaction.LOCK.UPDATE,
  });
  const member = await Member.findOne({
    where: { id: memberId, workspaceId },
    include: [{ model: User, as: "user", required: true }],
    transaction,
  });
  if (member && member.role === "OWNER" && role !== "OWNER" && owners.length <= 1) {
    throw validationError("The last OWNER cannot be removed or demoted", [
      { field: "role", message: "a workspace needs at least one OWNER" },
    ]);
  }
  return member;
}

/** Change a member's role (the last OWNER stays one). Null: no such member. */
export async function changeRole(
  workspaceId: WorkspaceId,
  memberId: string,
  role: Role,
): Promise<MemberView | null> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const member = await memberForChange(workspaceId, memberId, role, transaction);
    if (!member) return null;
    member.role = role;
    await member.save({ transaction });
    return memberView(member);
  });
}

/** Remove a member (not the last OWNER). False: no such member. */
export async function removeMember(workspaceId: WorkspaceId, memberId: string): Promise<boolean> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const member = await memberForChange(workspaceId, memberId, null, transaction);
    await member?.destroy({ transaction });
    return member !== null;
  });
}

export interface AuditEntry {
  workspaceId: WorkspaceId;
  actorType: string;
  actorId?: string | null;
  action: string;
  targetType?: string | null;
  targetId?: string | null;
  ip?: string | null;
  metadata?: Record<string, unknown>;
}

export async function recordAudit(entry: AuditEntry): Promise<void> {
  await AuditLog.create({ id: newId(), metadata: {}, ...entry });
}

type AuditRow = Pick<
  AuditLog,
  | "id"
  | "workspaceId"
  | "actorType"
  | "actorId"
  | "action"
  | "targetType"
  | "targetId"
  | "ip"
  | "metadata"
  | "createdAt"
>;

export async function listAudit(
  workspaceId: WorkspaceId,
  filters: { action?: string; actorId?: string; from?: Date; to?: Date },
  page: PageRequest,
) {
  const b = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filters.action) {
    where.push(
      filters.action.endsWith("*")
        ? `action LIKE ${b.p(`${likeEscape(filters.action.slice(0, -1))}%`)}`
        : `action = ${b.p(filters.action)}`,
    );
  }
  if (filters.actorId) where.push(`actor_id = ${b.p(filters.actorId)}`);
  if (filters.from) where.push(`created_at >= ${b.p(filters.from)}`);
  if (filters.to) where.push(`created_at <= ${b.p(filters.to)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    {
      select: `SELECT id, workspace_id AS "workspaceId", actor_type AS "actorType", actor_id AS "actorId", action,
                      target_type AS "targetType", target_id AS "targetId", ip, metadata, created_at AS "createdAt"
                 FROM audit_logs WHERE ${clause}`,
      orderBy: "created_at DESC, id DESC",
      countFrom: `FROM audit_logs WHERE ${clause}`,
    },
    b.values,
    page,
    (row: AuditRow) => row,
  );
}
