import { newId } from "../../lib/crypto";
import { MicroBatcher } from "../../lib/batcher";
import { Binds, query, queryAcrossWorkspacesPrepared } from "../../lib/database";
import type { InboxChannel } from "../../lib/channels";
import type { BusinessHours } from "./business-hours";
import type { AutoReplyView } from "./inbox.schemas";
import type { InboxMessageRow } from "./inbox-messages.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on auto-replies and the log that fires each at most once per thread and day. */

export interface AutoReplyRow {
  id: string;
  workspace_id: WorkspaceId;
  name: string;
  channel: InboxChannel | null;
  keywords: string[];
  business_hours: BusinessHours | null;
  body: string;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface AutoReplyInput {
  name?: string;
  channel?: InboxChannel | null;
  keywords?: string[];
  businessHours?: BusinessHours | null;
  body?: string;
  active?: boolean;
}

export const autoReplyView = (row: AutoReplyRow): AutoReplyView => ({
  id: row.id,
  name: row.name,
  channel: row.channel,
  keywords: row.keywords,
  businessHours: row.business_hours,
  body: row.body,
  active: row.active,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export function listAutoReplies(workspaceId: WorkspaceId): Promise<AutoReplyRow[]> {
  return query<AutoReplyRow>(
    workspaceId,
    `SELECT * FROM inbox_auto_replies WHERE workspace_id = $1 ORDER BY created_at, id`,
  );
}

export async function insertAutoReply(
  workspaceId: WorkspaceId,
  input: AutoReplyInput & { name: string; body: string },
): Promise<AutoReplyRow> {
  const [row] = await query<AutoReplyRow>(
    workspaceId,
    `INSERT INTO inbox_auto_replies (id, workspace_id, name, channel, keywords, business_hours, body, active)
     VALUES ($2, $1, $3, $4, $5::text[], $6::jsonb, $7, $8) RETURNING *`,
    [
      newId(),
      input.name,
      input.channel ?? null,
      input.keywords ?? [],
      input.businessHours ? JSON.stringify(input.businessHours) : null,
      input.body,
      input.active ?? true,
    ],
  );
  return row;
}

export async function updateAutoReply(
  workspaceId: WorkspaceId,
  id: string,
  input: AutoReplyInput,
): Promise<AutoReplyRow | null> {
  const b = Binds.inWorkspace([id]);
  const sets = ["updated_at = now()"];
  if (input.name !== undefined) sets.push(`name = ${b.p(input.name)}`);
  if (input.channel !== undefined) sets.push(`channel = ${b.p(input.channel)}`);
  if (input.keywords !== undefined) sets.push(`keywords = ${b.p(input.keywords, "text[]")}`);
  if (input.businessHours !== undefined)
    sets.push(
      `business_hours = ${b.p(input.businessHours ? JSON.stringify(input.businessHours) : null, "jsonb")}`,
    );
  if (input.body !== undefined) sets.push(`body = ${b.p(input.body)}`);
  if (input.active !== undefined) sets.push(`active = ${b.p(input.active)}`);
  const [row] = await query<AutoReplyRow>(
    workspaceId,
    `UPDATE inbox_auto_replies SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    b.values,
  );
  return row ?? null;
}

export async function deleteAutoReply(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `DELETE FROM inbox_auto_replies WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

/**
 * A rule's answer to a thread on a local day, stored (`sending`) only for
 * the first caller (the log row's key), so a rule fires once a day per
 * thread across replicas. Null when it answered that day already.
 */
export function firstAnswerToday(
  workspaceId: WorkspaceId,
  threadId: string,
  ruleId: string,
  day: string,
  body: string,
): Promise<InboxMessageRow | null> {
  return answerLogger.add({ workspaceId, threadId, ruleId, day, body, id: newId() });
}

/** A rule's answer asked for a thread on a day, with the id its stored answer takes. */
interface AnswerAsk {
  workspaceId: WorkspaceId;
  threadId: string;
  ruleId: string;
  day: string;
  body: string;
  id: string;
}

/**
 * Concurrent inbound messages ask in one statement (most find their thread
 * answered already). Two asks for one thread, rule and day in a batch: the
 * first stores the answer.
 */
const answerLogger = new MicroBatcher(
  async (asks: AnswerAsk[]): Promise<Array<InboxMessageRow | null>> => {
    const rows = await queryAcrossWorkspacesPrepared<InboxMessageRow>(
      `WITH asked AS (
         SELECT DISTINCT ON (thread_id, rule_id, day) *
           FROM unnest($1::text[], $2::text[], $3::text[], $4::date[], $5::text[], $6::text[])
                WITH ORDINALITY AS a(workspace_id, thread_id, rule_id, day, body, id, n)
          ORDER BY thread_id, rule_id, day, n
       ), logged AS (
         INSERT INTO inbox_auto_reply_log (thread_id, rule_id, day)
         SELECT t.id, a.rule_id, a.day FROM asked a
           JOIN inbox_threads t ON t.workspace_id = a.workspace_id AND t.id = a.thread_id
         ON CONFLICT DO NOTHING RETURNING thread_id, rule_id, day
       )
       INSERT INTO inbox_messages (id, workspace_id, thread_id, direction, body, author_id, status)
       SELECT a.id, a.workspace_id, a.thread_id, 'outbound', a.body, NULL, 'sending'
         FROM logged l JOIN asked a USING (thread_id, rule_id, day) RETURNING *`,
      [
        asks.map((a) => a.workspaceId),
        asks.map((a) => a.threadId),
        asks.map((a) => a.ruleId),
        asks.map((a) => a.day),
        asks.map((a) => a.body),
        asks.map((a) => a.id),
      ],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return asks.map((a) => byId.get(a.id) ?? null);
  },
  { maxBatch: 200, lanes: 1 },
);
