import type { Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { Binds, query } from "../../lib/database";
import type { InboxChannel } from "../../lib/channels";
import { config } from "../../lib/config";
import type { StorageKind } from "../content/asset-store";
import type { InboxAttachmentView, InboxMessageView } from "./inbox.schemas";
import type { ThreadRow } from "./threads.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on the messages of inbox threads (both ways); each takes the workspace id first. */

export interface InboxMessageRow {
  id: string;
  workspace_id: WorkspaceId;
  thread_id: string;
  direction: "inbound" | "outbound";
  body: string;
  subject: string | null;
  author_id: string | null;
  status: "received" | "sending" | "sent" | "failed";
  error: string | null;
  provider_id: string | null;
  provider_message_id: string | null;
  message_id: string | null;
  refs: string[];
  attachments: StoredAttachment[];
  created_at: Date;
  updated_at: Date;
}

/** An inbound mail's file as its message keeps it (migration 0100): in the assets' storage, or dropped. */
export interface StoredAttachment {
  id: string | null;
  fileName: string;
  contentType: string;
  size: number;
  storage: StorageKind | null;
  storageKey: string | null;
  dropped: "too_large" | "too_many" | null;
}

const attachmentView = (row: InboxMessageRow, a: StoredAttachment): InboxAttachmentView => ({
  id: a.id,
  fileName: a.fileName,
  contentType: a.contentType,
  size: a.size,
  url: a.id
    ? `${config().publicUrl}/api/workspaces/${row.workspace_id}/inbox/${row.thread_id}/attachments/${a.id}`
    : null,
  dropped: a.dropped,
});

export const inboxMessageView = (row: InboxMessageRow): InboxMessageView => ({
  id: row.id,
  direction: row.direction,
  body: row.body,
  authorId: row.author_id,
  status: row.status,
  error: row.error,
  providerMessageId: row.provider_message_id,
  messageId: row.message_id,
  attachments: row.attachments.map((a) => attachmentView(row, a)),
  createdAt: row.created_at,
});

export interface NewInbound {
  contactId: string;
  channel: InboxChannel;
  body: string;
  subject: string | null;
  originMessageId: string | null;
  providerId: string;
  providerMessageId: string | null;
  refs: string[];
  attachments: StoredAttachment[];
}

export type FiledInbound =
  | { duplicate: true; threadId: string; inboundId: string }
  | { duplicate: false; thread: ThreadRow; created: boolean; inboundId: string | null };

/**
 * File an inbound message in one statement (the caller holds the
 * conversation's lock): nothing when the provider delivered it before (its
 * id is the provider's own); else into the thread one of `refs` names (if
 * not closed and on the channel), else the contact's thread on the channel
 * that is not closed, made `open` again with one more unread, else a new
 * thread. `inboundId` null: the provider's id was stored in another
 * conversation meanwhile.
 */
export async function fileInbound(
  workspaceId: WorkspaceId,
  m: NewInbound,
  transaction: Transaction,
): Promise<FiledInbound> {
  const [row] = await query<
    ThreadRow & {
      created: boolean | null;
      inbound_id: string | null;
      seen_id: string | null;
      seen_thread_id: string | null;
    }
  >(
    workspaceId,
    `WITH seen AS (
       SELECT id, thread_id FROM inbox_messages
        WHERE $8::text IS NOT NULL AND provider_id = $7 AND provider_message_id = $8 AND direction = 'inbound'
     ), referenced AS (
       SELECT t.id, t.channel FROM inbox_messages rm JOIN inbox_threads t ON t.id = rm.thread_id
        WHERE rm.workspace_id = $1 AND rm.provider_message_id = ANY ($9::text[]) AND t.status <> 'closed'
        ORDER BY rm.created_at DESC LIMIT 1
     ), target AS (
       SELECT id FROM (SELECT id, 1 AS pref FROM referenced WHERE channel = $3
                       UNION ALL
                       SELECT id, 2 FROM inbox_threads
                        WHERE workspace_id = $1 AND contact_id = $2 AND channel = $3 AND status <> 'closed') c
        ORDER BY pref LIMIT 1
     ), touched AS (
       UPDATE inbox_threads SET status = 'open', snoozed_until = NULL, unread = unread + 1,
              awaiting_since = COALESCE(awaiting_since, now()), last_message_at = now(), updated_at = now(),
              subject = COALESCE(subject, $5), origin_message_id = COALESCE(origin_message_id, $6)
        WHERE workspace_id = $1 AND id = (SELECT id FROM target) AND NOT EXISTS (SELECT 1 FROM seen)
        RETURNING *
     ), made AS (
       INSERT INTO inbox_threads (id, workspace_id, contact_id, channel, subject, origin_message_id, status, unread,
                                  awaiting_since, last_message_at)
       SELECT $10, $1, $2, $3, $5, $6, 'open', 1, now(), now()
        WHERE NOT EXISTS (SELECT 1 FROM target) AND NOT EXISTS (SELECT 1 FROM seen)
       RETURNING *
     ), thread AS (
       SELECT *, false AS created FROM touched UNION ALL SELECT *, true FROM made
     ), inbound AS (
       INSERT INTO inbox_messages (id, workspace_id, thread_id, direction, body, subject, status, provider_id,
                                   provider_message_id, refs, attachments)
       SELECT $11, $1, thread.id, 'inbound', $4, $5, 'received', $7, $8, $9::text[], $12::jsonb FROM thread
       ON CONFLICT (provider_id, provider_message_id) WHERE direction = 'inbound' AND provider_message_id IS NOT NULL
       DO NOTHING RETURNING id
     )
     SELECT thread.*, inbound.id AS inbound_id, seen.id AS seen_id, seen.thread_id AS seen_thread_id
       FROM (SELECT 1) one LEFT JOIN thread ON true LEFT JOIN inbound ON true LEFT JOIN seen ON true`,
    [
      m.contactId,
      m.channel,
      m.body,
      m.subject,
      m.originMessageId,
      m.providerId,
      m.providerMessageId,
      m.refs,
      newId(),
      newId(),
      JSON.stringify(m.attachments),
    ],
    transaction,
  );
  const { created, inbound_id: inboundId, seen_id: seenId, seen_thread_id: seenThreadId, ...thread } = row;
  if (seenId && seenThreadId) return { duplicate: true, threadId: seenThreadId, inboundId: seenId };
  return { duplicate: false, thread, created: created === true, inboundId };
}

/** An answer on its way out (a member's reply, an auto-reply, a new conversation's first message). */
export async function insertOutbound(
  workspaceId: WorkspaceId,
  threadId: string,
  body: string,
  authorId: string | null,
): Promise<InboxMessageRow> {
  const [row] = await query<InboxMessageRow>(
    workspaceId,
    `INSERT INTO inbox_messages (id, workspace_id, thread_id, direction, body, author_id, status)
     VALUES ($2, $1, $3, 'outbound', $4, $5, 'sending') RETURNING *`,
    [newId(), threadId, body, authorId],
  );
  return row;
}

export interface SendOutcome {
  status: "sent" | "failed";
  error: string | null;
  messageId: string | null;
  providerId: string | null;
  providerMessageId: string | null;
}

/**
 * What the send path answered for an outbound message, and with `turn` (a
 * new answer) its thread's turn in the same statement: a member's (or an API
 * client's) answer leaves the thread waiting on the contact (`pending`), read
 * and answered; an auto-reply only moves its last message time. A reply sent
 * again leaves its thread as it is.
 */
export async function recordOutcome(
  workspaceId: WorkspaceId,
  id: string,
  outcome: SendOutcome,
  turn?: { threadId: string; byMember: boolean },
): Promise<InboxMessageRow> {
  const b = Binds.inWorkspace([id]);
  const answer = `UPDATE inbox_messages
        SET status = ${b.p(outcome.status)}, error = ${b.p(outcome.error)}, message_id = ${b.p(outcome.messageId)},
            provider_id = ${b.p(outcome.providerId)}, provider_message_id = ${b.p(outcome.providerMessageId)},
            updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING *`;
  const [row] = await query<InboxMessageRow>(
    workspaceId,
    turn
      ? `WITH answer AS (${answer}), thread AS (
           UPDATE inbox_threads SET ${
             turn.byMember
               ? `status = CASE WHEN status = 'closed' THEN status ELSE 'pending' END, unread = 0, awaiting_since = NULL,`
               : ""
           } last_message_at = now(), updated_at = now()
            WHERE workspace_id = $1 AND id = ${b.p(turn.threadId)}
         )
         SELECT * FROM answer`
      : answer,
    b.values,
  );
  return row;
}

/** Take a failed reply for a new attempt: only one caller gets it (null otherwise, or when there is no such reply). */
export async function claimFailed(
  workspaceId: WorkspaceId,
  threadId: string,
  id: string,
): Promise<{ row: InboxMessageRow | null; exists: boolean }> {
  const [row] = await query<InboxMessageRow>(
    workspaceId,
    `UPDATE inbox_messages SET status = 'sending', updated_at = now()
      WHERE workspace_id = $1 AND thread_id = $2 AND id = $3 AND direction = 'outbound' AND status = 'failed'
      RETURNING *`,
    [threadId, id],
  );
  if (row) return { row, exists: true };
  const [known] = await query<{ id: string }>(
    workspaceId,
    `SELECT id FROM inbox_messages WHERE workspace_id = $1 AND thread_id = $2 AND id = $3 AND direction = 'outbound'`,
    [threadId, id],
  );
  return { row: null, exists: Boolean(known) };
}

/** A thread's messages, oldest first. */
export async function threadMessages(workspaceId: WorkspaceId, threadId: string): Promise<InboxMessageRow[]> {
  return query<InboxMessageRow>(
    workspaceId,
    `SELECT * FROM inbox_messages WHERE workspace_id = $1 AND thread_id = $2 ORDER BY created_at, id`,
    [threadId],
  );
}

/** The contact's newest message in the thread: the provider to answer through and the mail to answer. */
export async function lastInbound(
  workspaceId: WorkspaceId,
  threadId: string,
): Promise<InboxMessageRow | null> {
  const [row] = await query<InboxMessageRow>(
    workspaceId,
    `SELECT * FROM inbox_messages WHERE workspace_id = $1 AND thread_id = $2 AND direction = 'inbound'
      ORDER BY created_at DESC, id DESC LIMIT 1`,
    [threadId],
  );
  return row ?? null;
}

type KeptAttachment = StoredAttachment & { storage: StorageKind; storageKey: string };

/** A stored attachment of one of the thread's messages (null: none such, or dropped). */
export async function findAttachment(
  workspaceId: WorkspaceId,
  threadId: string,
  attachmentId: string,
): Promise<KeptAttachment | null> {
  const [row] = await query<{ attachment: KeptAttachment }>(
    workspaceId,
    `SELECT a AS attachment FROM inbox_messages m, jsonb_array_elements(m.attachments) a
      WHERE m.workspace_id = $1 AND m.thread_id = $2 AND m.direction = 'inbound'
        AND a ->> 'id' = $3 AND a ->> 'storageKey' IS NOT NULL`,
    [threadId, attachmentId],
  );
  return row?.attachment ?? null;
}
