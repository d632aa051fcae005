import type { Transaction } from "sequelize";
import { MicroBatcher } from "../../lib/batcher";
import { newId } from "../../lib/crypto";
import { Binds, query, queryAcrossWorkspacesPrepared } from "../../lib/database";
import { selectPage, type PageRequest } from "../../lib/pagination";
import { Notification } from "../../models";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on notifications; each takes the workspace and the user it belongs to. */

export interface NotificationInput {
  type: string;
  title: string;
  body?: string | null;
  resourceType?: string | null;
  resourceId?: string | null;
  data?: Record<string, unknown>;
  /** A second notification with the same key is not made. */
  dedupeKey?: string | null;
}

/** A notification's fields as a view needs them: a model instance or a listed row. */
type NotificationFields = Pick<
  Notification,
  "id" | "type" | "title" | "body" | "resourceType" | "resourceId" | "data" | "readAt" | "createdAt"
>;

export const notificationView = (n: NotificationFields) => ({
  id: n.id,
  type: n.type,
  title: n.title,
  body: n.body,
  resource: n.resourceType ? { type: n.resourceType, id: n.resourceId } : null,
  data: n.data,
  read: n.readAt !== null,
  readAt: n.readAt,
  createdAt: n.createdAt,
});

/** The columns of a new notification, in insert order. */
const newRow = (workspaceId: WorkspaceId, userId: string, input: NotificationInput) => [
  workspaceId,
  newId(),
  userId,
  input.type,
  input.title,
  input.body ?? null,
  input.resourceType ?? null,
  input.resourceId ?? null,
  JSON.stringify(input.data ?? {}),
  input.dedupeKey ?? null,
];

/**
 * Notifications made outside a transaction by concurrent callers (each
 * inbound message tells its assignee) go in one statement; a used key is
 * a no-op (its unique index).
 */
const notifier = new MicroBatcher(
  async (rows: unknown[][]): Promise<boolean[]> => {
    const made = await queryAcrossWorkspacesPrepared<{ id: string }>(
      `INSERT INTO notifications (workspace_id, id, user_id, type, title, body, resource_type, resource_id, data, dedupe_key)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                            $8::text[], $9::jsonb[], $10::text[])
       ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
      rows[0].map((_, column) => rows.map((row) => row[column])),
    );
    const ids = new Set(made.map((r) => r.id));
    return rows.map((row) => ids.has(row[1] as string));
  },
  { maxBatch: 200, lanes: 1 },
);

/** Answers whether a notification was made (false when its dedupe key was already used). */
export async function notify(
  workspaceId: WorkspaceId,
  userId: string,
  input: NotificationInput,
  transaction?: Transaction,
): Promise<boolean> {
  if (!transaction) return notifier.add(newRow(workspaceId, userId, input));
  // One statement: a used key is a no-op (its unique index), never a read, then an insert in a transaction.
  const rows = await query<{ id: string }>(
    workspaceId,
    `INSERT INTO notifications (workspace_id, id, user_id, type, title, body, resource_type, resource_id, data, dedupe_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10)
     ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
    newRow(workspaceId, userId, input).slice(1),
    transaction,
  );
  return rows.length > 0;
}

export async function listNotifications(
  workspaceId: WorkspaceId,
  userId: string,
  f: { unread?: boolean; type?: string },
  page: PageRequest,
) {
  const b = Binds.inWorkspace([userId]);
  const where = ["workspace_id = $1", "user_id = $2"];
  if (f.unread === true) where.push("read_at IS NULL");
  if (f.unread === false) where.push("read_at IS NOT NULL");
  if (f.type) where.push(`type = ${b.p(f.type)}`);
  const clause = where.join(" AND ");
  const [listed, [{ n }]] = await Promise.all([
    selectPage(
      workspaceId,
      {
        select: `SELECT id, type, title, body, resource_type AS "resourceType", resource_id AS "resourceId", data,
                        read_at AS "readAt", created_at AS "createdAt"
                   FROM notifications WHERE ${clause}`,
        orderBy: "created_at DESC, id DESC",
        countFrom: `FROM notifications WHERE ${clause}`,
      },
      b.values,
      page,
      notificationView,
    ),
    query<{ n: string }>(
      workspaceId,
      `SELECT count(*) AS n FROM notifications WHERE workspace_id = $1 AND user_id = $2 AND read_at IS NULL`,
      [userId],
    ),
  ]);
  return { ...listed, unreadCount: Number(n) };
}

/** Mark read or unread; keeps the first time it was read. Null: the user has no such notification. */
export async function setRead(workspaceId: WorkspaceId, userId: string, id: string, read: boolean) {
  const notification = await Notification.findOne({ where: { id, workspaceId, userId } });
  if (!notification) return null;
  if (read && !notification.readAt) notification.readAt = new Date();
  if (!read) notification.readAt = null;
  return notificationView(await notification.save());
}

export async function deleteNotification(
  workspaceId: WorkspaceId,
  userId: string,
  id: string,
): Promise<boolean> {
  return (await Notification.destroy({ where: { id, workspaceId, userId } })) > 0;
}

export async function markAllRead(workspaceId: WorkspaceId, userId: string): Promise<{ updated: number }> {
  const [updated] = await Notification.update(
    { readAt: new Date() },
    { where: { workspaceId, userId, readAt: null } },
  );
  return { updated };
}
