import type { Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { Binds, query, queryPrepared } from "../../lib/database";
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
  | {
      duplicate: true;
      threadId: string;
      inboundId: string;
      /** The storage keys of the files the message stored before holds (a retry of that filing brings the same). */
      keptFiles: string[];
    }
  | {
      duplicate: false;
      thread: ThreadRow;
      created: boolean;
      inboundId: string | null;
      /** The auto-replies the thread had lately (`<ruleId> <day>`, from yesterday in UTC on), which answer no more that day. */
      autoAnswered: Set<string>;
    };

/**
 * File inbound messages of one workspace in one statement (the caller
 * holds their conversations' locks; at most one message a conversation):
 * nothing for one the provider delivered before (its id is the provider's
 * own); else into the thread one of its `refs` names (if not closed and on
 * the channel), else the contact's thread on the channel that is not
 * closed, made `open` again with one more unread, else a new thread. Each
 * answer in the order given; `inboundId` null: the provider's id was stored
 * in another conversation meanwhile; `thread` null: another message of the
 * statement took its thread (a mail naming another conversation's thread).
 * With the thread come its recent auto-replies' log entries, so a
 * conversation answered today asks nothing more of them. A message's
 * `created_at` is the statement's clock, not the transaction's: a
 * conversation's messages filed in one transaction (a statement each) keep
 * their order in the thread.
 */
export async function fileInbounds(
  workspaceId: WorkspaceId,
  messages: NewInbound[],
  transaction: Transaction,
): Promise<Array<FiledInbound | { duplicate: false; thread: null }>> {
  const rows = await queryPrepared<
    ThreadRow & {
      n: number | null;
      created: boolean | null;
      filed_n: number;
      inbound_id: string | null;
      seen_id: string | null;
      seen_thread_id: string | null;
      seen_files: string[] | null;
      auto_answered: string[] | null;
    }
  >(
    workspaceId,
    `WITH m AS (
       SELECT * FROM jsonb_to_recordset($2::jsonb) AS m(n integer, contact_id text, channel text, body text,
                subject text, origin_message_id text, provider_id text, provider_message_id text, refs jsonb,
                thread_id text, inbound_id text, attachments jsonb)
     ), seen AS (
       SELECT DISTINCT ON (m.n) m.n, im.id, im.thread_id,
              ARRAY(SELECT a->>'storageKey' FROM jsonb_array_elements(im.attachments) a
                     WHERE a->>'storageKey' IS NOT NULL) AS files
         FROM m JOIN inbox_messages im
           ON m.provider_message_id IS NOT NULL AND im.provider_id = m.provider_id
          AND im.provider_message_id = m.provider_message_id AND im.direction = 'inbound'
        ORDER BY m.n, im.id
     ), target AS (
       SELECT m.n, c.id FROM m CROSS JOIN LATERAL (
         SELECT id FROM (
           SELECT r.id, 1 AS pref FROM (
             SELECT t.id, t.channel FROM inbox_messages rm JOIN inbox_threads t ON t.id = rm.thread_id
              WHERE rm.workspace_id = $1 AND rm.provider_message_id IN (SELECT jsonb_array_elements_text(m.refs))
                AND t.status <> 'closed'
              ORDER BY rm.created_at DESC LIMIT 1) r
            WHERE r.channel = m.channel
           UNION ALL
           SELECT t.id, 2 FROM inbox_threads t
            WHERE t.workspace_id = $1 AND t.contact_id = m.contact_id AND t.channel = m.channel AND t.status <> 'closed') c0
          ORDER BY pref LIMIT 1) c
        WHERE NOT EXISTS (SELECT 1 FROM seen s WHERE s.n = m.n)
     ), touched AS (
       UPDATE inbox_threads t SET status = 'open', snoozed_until = NULL, unread = t.unread + 1,
              awaiting_since = COALESCE(t.awaiting_since, now()), last_message_at = now(), updated_at = now(),
              subject = COALESCE(t.subject, m.subject), origin_message_id = COALESCE(t.origin_message_id, m.origin_message_id)
         FROM target g JOIN m ON m.n = g.n
        WHERE t.workspace_id = $1 AND t.id = g.id
       RETURNING t.*, g.n
     ), made AS (
       INSERT INTO inbox_threads (id, workspace_id, contact_id, channel, subject, origin_message_id, status, unread,
                                  awaiting_since, last_message_at)
       SELECT m.thread_id, $1, m.contact_id, m.channel, m.subject, m.origin_message_id, 'open', 1, now(), now() FROM m
        WHERE NOT EXISTS (SELECT 1 FROM target g WHERE g.n = m.n) AND NOT EXISTS (SELECT 1 FROM seen s WHERE s.n = m.n)
       RETURNING *
     ), thread AS (
       SELECT touched.*, false AS created FROM touched
       UNION ALL
       SELECT made.*, m.n, true FROM made JOIN m ON m.thread_id = made.id
     ), inbound AS (
       INSERT INTO inbox_messages (id, workspace_id, thread_id, direction, body, subject, status, provider_id,
                                   provider_message_id, refs, attachments, created_at)
       SELECT m.inbound_id, $1, th.id, 'inbound', m.body, m.subject, 'received', m.provider_id, m.provider_message_id,
              ARRAY(SELECT jsonb_array_elements_text(m.refs)), m.attachments, clock_timestamp()
         FROM thread th JOIN m ON m.n = th.n
       ON CONFLICT (provider_id, provider_message_id) WHERE direction = 'inbound' AND provider_message_id IS NOT NULL
       DO NOTHING RETURNING id
     )
     SELECT th.*, m.n AS filed_n, i.id AS inbound_id, s.id AS seen_id, s.thread_id AS seen_thread_id, s.files AS seen_files,
            (SELECT array_agg(l.rule_id || ' ' || l.day::text) FROM inbox_auto_reply_log l
              WHERE l.thread_id = th.id AND l.day >= current_date - 1) AS auto_answered
       FROM m LEFT JOIN thread th ON th.n = m.n LEFT JOIN inbound i ON i.id = m.inbound_id LEFT JOIN seen s ON s.n = m.n`,
    [
      JSON.stringify(
        messages.map((m, n) => ({
          n,
          contact_id: m.contactId,
          channel: m.channel,
          body: m.body,
          subject: m.subject,
          origin_message_id: m.originMessageId,
          provider_id: m.providerId,
          provider_message_id: m.providerMessageId,
          refs: m.refs,
          thread_id: newId(),
          inbound_id: newId(),
          attachments: m.attachments,
        })),
      ),
    ],
    transaction,
  );
  const byN = new Map(rows.map((r) => [r.filed_n, r]));
  return messages.map((_, n) => {
    const {
      n: _n,
      filed_n: _filed,
      created,
      inbound_id: inboundId,
      seen_id: seenId,
      seen_thread_id: seenThreadId,
      seen_files: seenFiles,
      auto_answered: autoAnswered,
      ...thread
    } = byN.get(n)!;
    if (seenId && seenThreadId)
      return { duplicate: true, threadId: seenThreadId, inboundId: seenId, keptFiles: seenFiles ?? [] };
    if (!thread.id) return { duplicate: false, thread: null };
    return {
      duplicate: false,
      thread,
      created: created === true,
      inboundId,
      autoAnswered: new Set(autoAnswered ?? []),
    };
  });
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
