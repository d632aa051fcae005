import { Op, type Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { selectRows } from "../../lib/database";
import { pageOf, type PageRequest } from "../../lib/pagination";
import { Notification } from "../../models";

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

export const notificationView = (n: Notification) => ({
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

/** Answers whether a notification was made (false when its dedupe key was already used). */
export async function notify(
  workspaceId: string,
  userId: string,
  input: NotificationInput,
  transaction?: Transaction,
): Promise<boolean> {
  // One statement: a used key is a no-op (its unique index), never a read, then an insert in a transaction.
  const rows = await selectRows<{ id: string }>(
    `INSERT INTO notifications (id, workspace_id, user_id, type, title, body, resource_type, resource_id, data, dedupe_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10)
     ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
    [
      newId(),
      workspaceId,
      userId,
      input.type,
      input.title,
      input.body ?? null,
      input.resourceType ?? null,
      input.resourceId ?? null,
      JSON.stringify(input.data ?? {}),
      input.dedupeKey ?? null,
    ],
    transaction,
  );
  return rows.length > 0;
}

export async function listNotifications(
  workspaceId: string,
  userId: string,
  f: { unread?: boolean; type?: string },
  page: PageRequest,
) {
  const where: Record<string | symbol, unknown> = { workspaceId, userId };
  if (f.unread === true) where.readAt = null;
  if (f.unread === false) where.readAt = { [Op.ne]: null };
  if (f.type) where.type = f.type;
  const [{ rows, count }, unreadCount] = await Promise.all([
    Notification.findAndCountAll({
      where,
      order: [
        ["createdAt", "DESC"],
        ["id", "DESC"],
      ],
      limit: page.limit,
      offset: page.offset,
    }),
    Notification.count({ where: { workspaceId, userId, readAt: null } }),
  ]);
  return { ...pageOf(rows.map(notificationView), count, page), unreadCount };
}

/** Mark read or unread; keeps the first time it was read. Null: the user has no such notification. */
export async function setRead(workspaceId: string, userId: string, id: string, read: boolean) {
  const notification = await Notification.findOne({ where: { id, workspaceId, userId } });
  if (!notification) return null;
  if (read && !notification.readAt) notification.readAt = new Date();
  if (!read) notification.readAt = null;
  return notificationView(await notification.save());
}

export async function deleteNotification(workspaceId: string, userId: string, id: string): Promise<boolean> {
  return (await Notification.destroy({ where: { id, workspaceId, userId } })) > 0;
}

export async function markAllRead(workspaceId: string, userId: string): Promise<{ updated: number }> {
  const [updated] = await Notification.update(
    { readAt: new Date() },
    { where: { workspaceId, userId, readAt: null } },
  );
  return { updated };
}
