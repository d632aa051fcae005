import type { Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { selectRows } from "../../lib/database";
import type { InboxMessageView } from "./inbox.schemas";

/** Every query on the messages of inbox threads (both ways); each takes the workspace id first. */

export interface InboxMessageRow {
  id: string;
  workspace_id: string;
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
  created_at: Date;
  updated_at: Date;
}

export const inboxMessageView = (row: InboxMessageRow): InboxMessageView => ({
  id: row.id,
  direction: row.direction,
  body: row.body,
  authorId: row.author_id,
  status: row.status,
  error: row.error,
  providerMessageId: row.provider_message_id,
  messageId: row.message_id,
  createdAt: row.created_at,
});

/** The inbound a provider already delivered (its id is the provider's own, so a retried webhook is known). */
export async function findInbound(
  providerId: string,
  providerMessageId: string,
  transaction?: Transaction,
): Promise<InboxMessageRow | null> {
  const [row] = await selectRows<InboxMessageRow>(
    `SELECT * FROM inbox_messages WHERE provider_id = $1 AND provider_message_id = $2 AND direction = 'inbound'`,
    [providerId, providerMessageId],
    transaction,
  );
  return row ?? null;
}

/** The newest conversation of the workspace, not closed, holding a message the provider knows by one of `ids`. */
export async function threadByReferences(
  workspaceId: string,
  ids: string[],
  transaction?: Transaction,
): Promise<string | null> {
  if (!ids.length) return null;
  const [row] = await selectRows<{ thread_id: string }>(
    `SELECT m.thread_id FROM inbox_messages m JOIN inbox_threads t ON t.id = m.thread_id
      WHERE m.workspace_id = $1 AND m.provider_message_id = ANY ($2::text[]) AND t.status <> 'closed'
      ORDER BY m.created_at DESC LIMIT 1`,
    [workspaceId, ids],
    transaction,
  );
  return row?.thread_id ?? null;
}

export interface NewInbound {
  threadId: string;
  body: string;
  subject: string | null;
  providerId: string;
  providerMessageId: string | null;
  refs: string[];
}

/** Store an inbound message; null when the provider delivered it before (its unique id). */
export async function insertInbound(
  workspaceId: string,
  m: NewInbound,
  transaction: Transaction,
): Promise<InboxMessageRow | null> {
  const [row] = await selectRows<InboxMessageRow>(
    `INSERT INTO inbox_messages (id, workspace_id, thread_id, direction, body, subject, status, provider_id,
                                 provider_message_id, refs)
     VALUES ($1, $2, $3, 'inbound', $4, $5, 'received', $6, $7, $8::text[])
     ON CONFLICT (provider_id, provider_message_id) WHERE direction = 'inbound' AND provider_message_id IS NOT NULL
     DO NOTHING RETURNING *`,
    [newId(), workspaceId, m.threadId, m.body, m.subject, m.providerId, m.providerMessageId, m.refs],
    transaction,
  );
  return row ?? null;
}

/** An answer on its way out (a member's reply, an auto-reply, a new conversation's first message). */
export async function insertOutbound(
  workspaceId: string,
  threadId: string,
  body: string,
  authorId: string | null,
): Promise<InboxMessageRow> {
  const [row] = await selectRows<InboxMessageRow>(
    `INSERT INTO inbox_messages (id, workspace_id, thread_id, direction, body, author_id, status)
     VALUES ($1, $2, $3, 'outbound', $4, $5, 'sending') RETURNING *`,
    [newId(), workspaceId, threadId, body, authorId],
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

/** What the send path answered for an outbound message. */
export async function recordOutcome(
  workspaceId: string,
  id: string,
  outcome: SendOutcome,
): Promise<InboxMessageRow> {
  const [row] = await selectRows<InboxMessageRow>(
    `UPDATE inbox_messages SET status = $3, error = $4, message_id = $5, provider_id = $6, provider_message_id = $7,
            updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    [
      workspaceId,
      id,
      outcome.status,
      outcome.error,
      outcome.messageId,
      outcome.providerId,
      outcome.providerMessageId,
    ],
  );
  return row;
}

/** Take a failed reply for a new attempt: only one caller gets it (null otherwise, or when there is no such reply). */
export async function claimFailed(
  workspaceId: string,
  threadId: string,
  id: string,
): Promise<{ row: InboxMessageRow | null; exists: boolean }> {
  const [row] = await selectRows<InboxMessageRow>(
    `UPDATE inbox_messages SET status = 'sending', updated_at = now()
      WHERE workspace_id = $1 AND thread_id = $2 AND id = $3 AND direction = 'outbound' AND status = 'failed'
      RETURNING *`,
    [workspaceId, threadId, id],
  );
  if (row) return { row, exists: true };
  const [known] = await selectRows<{ id: string }>(
    `SELECT id FROM inbox_messages WHERE workspace_id = $1 AND thread_id = $2 AND id = $3 AND direction = 'outbound'`,
    [workspaceId, threadId, id],
  );
  return { row: null, exists: Boolean(known) };
}

/** A thread's messages, oldest first. */
export async function threadMessages(workspaceId: string, threadId: string): Promise<InboxMessageRow[]> {
  return selectRows<InboxMessageRow>(
    `SELECT * FROM inbox_messages WHERE workspace_id = $1 AND thread_id = $2 ORDER BY created_at, id`,
    [workspaceId, threadId],
  );
}

/** The contact's newest message in the thread: the provider to answer through and the mail to answer. */
export async function lastInbound(workspaceId: string, threadId: string): Promise<InboxMessageRow | null> {
  const [row] = await selectRows<InboxMessageRow>(
    `SELECT * FROM inbox_messages WHERE workspace_id = $1 AND thread_id = $2 AND direction = 'inbound'
      ORDER BY created_at DESC, id DESC LIMIT 1`,
    [workspaceId, threadId],
  );
  return row ?? null;
}
