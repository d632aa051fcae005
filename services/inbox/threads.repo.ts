import type { Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import {
  Binds,
  likeEscape,
  query,
  queryAcrossWorkspaces,
  queryAcrossWorkspacesPrepared,
} from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { InboxChannel } from "../../lib/channels";
import type { ContactBrief, ThreadStatus, ThreadView } from "./inbox.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on inbox threads; each takes the workspace id first (the periodic sweeps span workspaces on purpose). */

export interface ThreadRow {
  id: string;
  workspace_id: WorkspaceId;
  channel: InboxChannel;
  contact_id: string;
  subject: string | null;
  status: ThreadStatus;
  assignee_id: string | null;
  assigned_at: Date | null;
  rule_id: string | null;
  snoozed_until: Date | null;
  tags: string[];
  unread: number;
  awaiting_since: Date | null;
  origin_message_id: string | null;
  last_message_at: Date;
  created_at: Date;
  updated_at: Date;
}

export function threadView(row: ThreadRow, contact: ContactBrief | null): ThreadView {
  return {
    id: row.id,
    channel: row.channel,
    contactId: row.contact_id,
    contact,
    subject: row.subject,
    status: row.status,
    assigneeId: row.assignee_id,
    snoozedUntil: row.snoozed_until,
    tags: row.tags,
    lastMessageAt: row.last_message_at,
    unread: row.unread,
    originMessageId: row.origin_message_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface ThreadFilters {
  status?: ThreadStatus;
  channel?: InboxChannel;
  assigneeId?: string;
  contactId?: string;
  search?: string;
}

export async function listThreads(
  workspaceId: WorkspaceId,
  f: ThreadFilters,
  page: PageRequest,
): Promise<Page<ThreadRow>> {
  const b = Binds.inWorkspace();
  const where = ["t.workspace_id = $1"];
  if (f.status) where.push(`t.status = ${b.p(f.status)}`);
  if (f.channel) where.push(`t.channel = ${b.p(f.channel)}`);
  if (f.assigneeId) where.push(`t.assignee_id = ${b.p(f.assigneeId)}`);
  if (f.contactId) where.push(`t.contact_id = ${b.p(f.contactId)}`);
  if (f.search) {
    const like = b.p(`%${likeEscape(f.search)}%`);
    where.push(`(t.subject ILIKE ${like} OR EXISTS (SELECT 1 FROM inbox_messages m
                  WHERE m.thread_id = t.id AND m.body ILIKE ${like}))`);
  }
  return selectPage<ThreadRow, ThreadRow>(
    workspaceId,
    {
      select: `SELECT t.* FROM inbox_threads t WHERE ${where.join(" AND ")}`,
      orderBy: "t.last_message_at DESC, t.id DESC",
    },
    b.values,
    page,
    (row) => row,
  );
}

/** Unread threads and messages of the workspace's conversations that are not closed, per assignee. */
export async function unreadByAssignee(
  workspaceId: WorkspaceId,
): Promise<Array<{ assigneeId: string | null; threads: number; messages: number }>> {
  const rows = await query<{ assignee_id: string | null; threads: string; messages: string }>(
    workspaceId,
    `SELECT assignee_id, count(*) AS threads, sum(unread) AS messages FROM inbox_threads
      WHERE workspace_id = $1 AND status <> 'closed' AND unread > 0
      GROUP BY assignee_id ORDER BY assignee_id NULLS FIRST`,
  );
  return rows.map((r) => ({
    assigneeId: r.assignee_id,
    threads: Number(r.threads),
    messages: Number(r.messages),
  }));
}

export async function findThread(workspaceId: WorkspaceId, threadId: string): Promise<ThreadRow | null> {
  const [row] = await query<ThreadRow>(
    workspaceId,
    `SELECT * FROM inbox_threads WHERE workspace_id = $1 AND id = $2`,
    [threadId],
  );
  return row ?? null;
}

/**
 * Serialise every writer of one contact's conversation on a channel (any
 * replica) until the transaction ends: two inbound messages arriving at once
 * find the same thread instead of opening one each. Several conversations are
 * locked in one statement, always in the order of their keys, so two writers
 * locking overlapping sets never wait on each other.
 */
export async function lockConversations(
  conversations: Array<{ workspaceId: WorkspaceId; contactId: string; channel: InboxChannel }>,
  transaction: Transaction,
): Promise<void> {
  const keys = [
    ...new Set(conversations.map((c) => `inbox:${c.workspaceId}:${c.contactId}:${c.channel}`)),
  ].sort();
  await queryAcrossWorkspacesPrepared(
    `SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k`,
    [keys],
    transaction,
  );
}

/** The contact's conversation on the channel that is not closed (at most one: a unique index). */
export async function openThreadOf(
  workspaceId: WorkspaceId,
  contactId: string,
  channel: InboxChannel,
): Promise<ThreadRow | null> {
  const [row] = await query<ThreadRow>(
    workspaceId,
    `SELECT * FROM inbox_threads WHERE workspace_id = $1 AND contact_id = $2 AND channel = $3 AND status <> 'closed'`,
    [contactId, channel],
  );
  return row ?? null;
}

export async function insertThread(
  workspaceId: WorkspaceId,
  input: {
    contactId: string;
    channel: InboxChannel;
    subject: string | null;
    originMessageId: string | null;
  },
): Promise<ThreadRow> {
  const [row] = await query<ThreadRow>(
    workspaceId,
    `INSERT INTO inbox_threads (id, workspace_id, contact_id, channel, subject, origin_message_id)
     VALUES ($2, $1, $3, $4, $5, $6) RETURNING *`,
    [newId(), input.contactId, input.channel, input.subject, input.originMessageId],
  );
  return row;
}

/** A member read the thread. */
export async function markRead(workspaceId: WorkspaceId, threadId: string): Promise<void> {
  await query(
    workspaceId,
    `UPDATE inbox_threads SET unread = 0 WHERE workspace_id = $1 AND id = $2 AND unread > 0`,
    [threadId],
  );
}

export interface ThreadChanges {
  status?: ThreadStatus;
  assigneeId?: string | null;
  snoozedUntil?: Date | null;
  tags?: string[];
}

/** Apply a PATCH; answers the thread and who held it before (null: no such thread). */
export async function updateThread(
  workspaceId: WorkspaceId,
  threadId: string,
  changes: ThreadChanges,
): Promise<{ thread: ThreadRow; previousAssignee: string | null } | null> {
  const b = Binds.inWorkspace([threadId]);
  const sets = ["updated_at = now()"];
  if (changes.status !== undefined) sets.push(`status = ${b.p(changes.status)}`);
  if (changes.assigneeId !== undefined)
    sets.push(`assignee_id = ${b.p(changes.assigneeId)}`, `assigned_at = now()`);
  if (changes.snoozedUntil !== undefined) sets.push(`snoozed_until = ${b.p(changes.snoozedUntil)}`);
  if (changes.tags !== undefined) sets.push(`tags = ${b.p(changes.tags, "text[]")}`);
  const [row] = await query<ThreadRow & { previous_assignee: string | null }>(
    workspaceId,
    `WITH before AS (SELECT id, assignee_id FROM inbox_threads WHERE workspace_id = $1 AND id = $2 FOR UPDATE)
     UPDATE inbox_threads t SET ${sets.join(", ")} FROM before
      WHERE t.id = before.id RETURNING t.*, before.assignee_id AS previous_assignee`,
    b.values,
  );
  if (!row) return null;
  const { previous_assignee: previousAssignee, ...thread } = row;
  return { thread, previousAssignee };
}

/**
 * Give an unassigned thread to a member: only while nobody holds it, so of
 * several replicas (or rules) racing, exactly one assigns it. Null when it
 * was taken (or is closed).
 */
export async function claimThread(
  workspaceId: WorkspaceId,
  threadId: string,
  assigneeId: string,
  ruleId: string | null,
): Promise<ThreadRow | null> {
  const [row] = await query<ThreadRow>(
    workspaceId,
    `UPDATE inbox_threads SET assignee_id = $3, assigned_at = now(), rule_id = $4, updated_at = now()
      WHERE workspace_id = $1 AND id = $2 AND assignee_id IS NULL AND status <> 'closed' RETURNING *`,
    [threadId, assigneeId, ruleId],
  );
  return row ?? null;
}

/** Threads waiting for a rule's members to have room, oldest first. */
export async function waitingThreads(
  workspaceId: WorkspaceId,
  ruleId: string,
  limit: number,
): Promise<ThreadRow[]> {
  return query<ThreadRow>(
    workspaceId,
    `SELECT * FROM inbox_threads
      WHERE workspace_id = $1 AND rule_id = $2 AND assignee_id IS NULL AND status <> 'closed'
      ORDER BY created_at, id LIMIT $3`,
    [ruleId, limit],
  );
}

/** A rule's assigned threads whose contact has waited for an answer longer than `minutes` since assignment. */
export async function unansweredThreads(
  workspaceId: WorkspaceId,
  ruleId: string,
  minutes: number,
  now: Date,
  limit: number,
): Promise<ThreadRow[]> {
  return query<ThreadRow>(
    workspaceId,
    `SELECT * FROM inbox_threads
      WHERE workspace_id = $1 AND rule_id = $2 AND assignee_id IS NOT NULL AND status = 'open'
        AND awaiting_since IS NOT NULL
        AND GREATEST(awaiting_since, assigned_at) <= $3::timestamptz - $4 * interval '1 minute'
      ORDER BY awaiting_since, id LIMIT $5`,
    [ruleId, now, minutes, limit],
  );
}

/** Snoozed threads whose time has come open again (any workspace); answers how many. */
export async function wakeSnoozed(now: Date): Promise<number> {
  const rows = await queryAcrossWorkspaces<{ id: string }>(
    `UPDATE inbox_threads SET status = 'open', snoozed_until = NULL, updated_at = now()
      WHERE status = 'snoozed' AND snoozed_until <= $1 RETURNING id`,
    [now],
  );
  return rows.length;
}
