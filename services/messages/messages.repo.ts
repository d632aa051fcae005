import { randomBase62 } from "../../lib/crypto";
import {
  Binds,
  database,
  isoTimeSql,
  query,
  queryAcrossWorkspaces,
  queryAcrossWorkspacesPrepared,
  queryPrepared,
} from "../../lib/database";
import { wakeOutboxRelays } from "../../lib/outbox";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { QueueFigures } from "../../lib/business-metrics";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import { retentionPurge } from "../../lib/retention";
import type { Channel } from "../../lib/channels";
import type { Content } from "../templates/render";
import type { MessageDetail, MessageView, ShortLinkView } from "./messages.schemas";
import { messageDeliveries } from "./push-deliveries.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query of the messages area: the message queue and record, short links and their clicks. */

export interface MessageRow {
  id: string;
  workspace_id: WorkspaceId;
  contact_id: string | null;
  channel: Channel;
  status: string;
  reason: string | null;
  to_address: string;
  template_id: string | null;
  variant: string | null;
  locale: string | null;
  campaign_id: string | null;
  enrollment_id: string | null;
  topic: string | null;
  transactional: boolean;
  provider_id: string | null;
  provider_type: string | null;
  provider_message_id: string | null;
  segments: number | null;
  content: Content | null;
  variables: Record<string, unknown>;
  send_at: Date;
  sent_at: Date | null;
  delivered_at: Date | null;
  opened_at: Date | null;
  clicked_at: Date | null;
  opens: number;
  clicks: number;
  error: string | null;
  attempts: number;
  history: Array<{ status: string; at: string; reason: string | null }>;
  created_at: Date;
  updated_at: Date;
}

/** The columns a send is made from: a claim returns these alone (500 rows a pass, parsed on the sender's thread). */
const CLAIMED_COLUMNS = [
  "id",
  "workspace_id",
  "contact_id",
  "channel",
  "to_address",
  "template_id",
  "variant",
  "locale",
  "campaign_id",
  "enrollment_id",
  "topic",
  "transactional",
  "provider_id",
  "content",
  "variables",
  "attempts",
] as const;
export type ClaimedMessage = Pick<MessageRow, (typeof CLAIMED_COLUMNS)[number]>;

export function messageView(r: MessageRow): MessageView {
  return {
    id: r.id,
    channel: r.channel,
    status: r.status as MessageView["status"],
    reason: r.reason,
    contactId: r.contact_id,
    to: r.to_address,
    templateId: r.template_id,
    variant: r.variant,
    locale: r.locale,
    campaignId: r.campaign_id,
    enrollmentId: r.enrollment_id,
    topic: r.topic,
    transactional: r.transactional,
    providerId: r.provider_id,
    providerType: r.provider_type,
    providerMessageId: r.provider_message_id,
    segments: r.segments,
    sendAt: r.send_at,
    sentAt: r.sent_at,
    deliveredAt: r.delivered_at,
    openedAt: r.opened_at,
    clickedAt: r.clicked_at,
    opens: r.opens,
    clicks: r.clicks,
    error: r.error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const detailView = (r: MessageRow): MessageDetail => ({
  ...messageView(r),
  content: r.content,
  history: r.history,
});

/**
 * A history entry built in SQL: the status and reason as SQL (a `$n` bind, or
 * a literal through `historyEntry`). Its time is the statement's clock, not the
 * transaction's start (`now()`), so entries written one after another never go
 * back in time (a claim whose transaction began before the insert committed).
 */
const historyItem = (statusSql: string, reasonSql: string) =>
  `jsonb_build_array(jsonb_build_object('status', ${statusSql}, 'at', ${isoTimeSql("clock_timestamp()")}, 'reason', ${reasonSql}))`;

/** A history entry appended in SQL (see `historyItem`). */
export const historyAppend = (statusSql: string, reasonSql = "NULL") =>
  `history || ${historyItem(statusSql, reasonSql)}`;

/** A history entry of a fixed status (`$n` is the reason). */
const historyEntry = (status: string, reasonParam = "NULL") => historyAppend(`'${status}'`, reasonParam);

export interface NewMessage {
  id: string;
  contactId: string | null;
  channel: Channel;
  status: "queued" | "suppressed";
  reason: string | null;
  to: string;
  templateId: string | null;
  locale: string | null;
  campaignId: string | null;
  enrollmentId: string | null;
  topic: string | null;
  transactional: boolean;
  providerId: string | null;
  content: Content | null;
  variables: Record<string, unknown>;
  sendAt: Date;
  /** Why the send waits (quiet hours), noted in its history. */
  deferred: string | null;
}

/**
 * Record messages (queued or suppressed) in one statement; their rows in the
 * order given. With `claimLeaseMs` (a send made at once) the queued ones are
 * inserted already claimed, as `messages_claim_due` would leave them
 * (`sending`, one attempt, the lease, `sending` in the history): no claim
 * statement follows, and should the process die, the lease's end hands them to the queue.
 */
export async function insertMessages(
  workspaceId: WorkspaceId,
  messages: NewMessage[],
  claimLeaseMs: number | null = null,
): Promise<MessageRow[]> {
  if (!messages.length) return [];
  const rows = messages.map((m) => ({
    id: m.id,
    contact_id: m.contactId,
    channel: m.channel,
    status: m.status,
    reason: m.reason,
    to_address: m.to,
    template_id: m.templateId,
    locale: m.locale,
    campaign_id: m.campaignId,
    enrollment_id: m.enrollmentId,
    topic: m.topic,
    transactional: m.transactional,
    provider_id: m.providerId,
    content: m.content,
    variables: m.variables,
    send_at: m.sendAt.toISOString(),
    history_reason: m.reason ?? m.deferred,
  }));
  const inserted = await query<MessageRow>(
    workspaceId,
    `INSERT INTO messages (id, workspace_id, contact_id, channel, status, reason, to_address, template_id, locale,
                           campaign_id, enrollment_id, topic, transactional, provider_id, content, variables, send_at,
                           attempts, lease_until, history)
     SELECT r.id, $1, r.contact_id, r.channel, CASE WHEN c.claimed THEN 'sending' ELSE r.status END, r.reason,
            r.to_address, r.template_id, r.locale, r.campaign_id, r.enrollment_id, r.topic, r.transactional,
            r.provider_id, r.content, r.variables, r.send_at,
            CASE WHEN c.claimed THEN 1 ELSE 0 END,
            CASE WHEN c.claimed THEN now() + $3::integer * interval '1 millisecond' END,
            ${historyItem("r.status", "r.history_reason")}
              || CASE WHEN c.claimed THEN ${historyItem("'sending'", "NULL")} ELSE '[]'::jsonb END
       FROM jsonb_to_recordset($2::jsonb) AS r(id text, contact_id text, channel text, status text, reason text,
              to_address text, template_id text, locale text, campaign_id text, enrollment_id text, topic text,
              transactional boolean, provider_id text, content jsonb, variables jsonb, send_at timestamptz, history_reason text),
            LATERAL (SELECT $3::integer IS NOT NULL AND r.status = 'queued' AS claimed) c
     ON CONFLICT (id) DO NOTHING
     RETURNING *`,
    [JSON.stringify(rows), claimLeaseMs],
  );
  // A caller-chosen id already taken (a retried step racing its first run) is not queued twice.
  const byId = new Map(inserted.map((r) => [r.id, r]));
  return messages.flatMap((m) => (byId.has(m.id) ? [byId.get(m.id)!] : []));
}

/** Which of `ids` are messages already. */
export async function existingMessageIds(workspaceId: WorkspaceId, ids: string[]): Promise<Set<string>> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `SELECT id FROM messages WHERE workspace_id = $1 AND id = ANY ($2::text[])`,
    [ids],
  );
  return new Set(rows.map((r) => r.id));
}

export async function getMessage(workspaceId: WorkspaceId, id: string): Promise<MessageDetail | null> {
  const [row] = await query<MessageRow>(
    workspaceId,
    `SELECT * FROM messages WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
  if (!row) return null;
  const detail = detailView(row);
  return row.channel === "push"
    ? { ...detail, deliveries: await messageDeliveries(workspaceId, id) }
    : detail;
}

/** A message by id alone: public tracking links name no workspace (their signature vouches for the id). */
export async function getMessageById(id: string): Promise<MessageRow | null> {
  const [row] = await queryAcrossWorkspaces<MessageRow>(`SELECT * FROM messages WHERE id = $1`, [id]);
  return row ?? null;
}

export interface MessageFilter {
  status?: string;
  channel?: string;
  contactId?: string;
  campaignId?: string;
  templateId?: string;
  from?: string;
  to?: string;
}

export async function listMessages(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: MessageFilter,
): Promise<Page<MessageView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  const equal: Array<[keyof MessageFilter, string]> = [
    ["status", "status"],
    ["channel", "channel"],
    ["contactId", "contact_id"],
    ["campaignId", "campaign_id"],
    ["templateId", "template_id"],
  ];
  for (const [key, column] of equal) if (filter[key]) where.push(`${column} = ${binds.p(filter[key])}`);
  if (filter.from) where.push(`created_at >= ${binds.p(filter.from)}`);
  if (filter.to) where.push(`created_at <= ${binds.p(filter.to)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM messages WHERE ${clause}`, orderBy: "created_at DESC, id DESC" },
    binds.values,
    page,
    messageView,
  );
}

/** Per contact, its non-transactional sends on `channels` since `since` that count against the frequency cap. */
export async function recentSendCounts(
  workspaceId: WorkspaceId,
  contactIds: string[],
  channels: string[] | null,
  since: Date,
): Promise<Map<string, number>> {
  if (!contactIds.length) return new Map();
  // One index probe per contact (messages_contact_idx): planned as one query over the workspace's recent
  // messages, a busy workspace whose statistics lag scanned all of them (seconds at 100,000).
  const rows = await query<{ contact_id: string; n: string }>(
    workspaceId,
    `SELECT c.id AS contact_id, recent.n FROM unnest($2::text[]) AS c(id)
       CROSS JOIN LATERAL (
         SELECT count(*) AS n FROM messages m
          WHERE m.contact_id = c.id AND m.created_at >= $3 AND m.workspace_id = $1 AND NOT m.transactional
            AND m.status NOT IN ('suppressed', 'failed') AND ($4::text[] IS NULL OR m.channel = ANY ($4::text[]))
       ) AS recent
      WHERE recent.n > 0`,
    [contactIds, since, channels],
  );
  return new Map(rows.map((r) => [r.contact_id, Number(r.n)]));
}

/** One contact's sends that count against the cap since `since`: how many, and when the oldest was made. */
export async function capWindow(
  workspaceId: WorkspaceId,
  contactId: string,
  channels: string[] | null,
  since: Date,
): Promise<{ count: number; oldest: Date | null }> {
  const [row] = await query<{ n: string; oldest: Date | null }>(
    workspaceId,
    `SELECT count(*) AS n, min(m.created_at) AS oldest FROM messages m
      WHERE m.contact_id = $2 AND m.created_at >= $3 AND m.workspace_id = $1 AND NOT m.transactional
        AND m.status NOT IN ('suppressed', 'failed') AND ($4::text[] IS NULL OR m.channel = ANY ($4::text[]))`,
    [contactId, since, channels],
  );
  return { count: Number(row.n), oldest: row.oldest };
}

/**
 * Take up to `limit` due sends that no other worker holds (`FOR UPDATE SKIP
 * LOCKED`): queued ones whose `sendAt` has come, and sending ones whose
 * worker's lease ran out (it crashed). Each claim counts an attempt, which
 * the worker then quotes to record the outcome, so a worker whose lease was
 * taken over cannot overwrite the newer claim's result.
 */
export async function claimDue(limit: number, leaseMs: number): Promise<ClaimedMessage[]> {
  // One call, no transaction: the claim is a function (migration 0093) that reads the due sends in
  // send_at order through messages_due_idx with bitmap scans off (see there why).
  return queryAcrossWorkspacesPrepared<ClaimedMessage>(
    `SELECT ${CLAIMED_COLUMNS.join(", ")} FROM messages_claim_due($1, $2)`,
    [Math.max(1, Math.floor(limit)), leaseMs],
  );
}

/**
 * The send queue's figures across workspaces (lib/queue-stats.ts): queued
 * sends, and sends whose worker's lease ran out (due again); sends a live
 * worker holds are in flight, neither due nor waiting.
 */
export async function sendQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("send_at <= now()", "send_at")} FROM messages
      WHERE status IN ('queued', 'sending') AND (status = 'queued' OR lease_until < now())`,
    [],
  );
  return queueFigures("messages", row);
}

/**
 * An operator's retry: a failed message of the workspace back in the queue,
 * due now, its attempts reset and the move in its history. False when no
 * failed message of the workspace has this id.
 */
export async function requeueFailed(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `UPDATE messages SET status = 'queued', attempts = 0, error = NULL, send_at = now(), lease_until = NULL,
            updated_at = now(), history = ${historyEntry("queued", "'operator_retry'")}
      WHERE workspace_id = $1 AND id = $2 AND status = 'failed'
      RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

/** Sent messages of the workspace a reply names (repliedToKeys: the provider's ids or ours), newest first. */
export async function messagesRepliedTo(
  workspaceId: WorkspaceId,
  keys: { providerIds: string[]; ownIds: string[] },
): Promise<Array<{ id: string; contactId: string | null; campaignId: string | null }>> {
  return query(
    workspaceId,
    `SELECT id, contact_id AS "contactId", campaign_id AS "campaignId" FROM messages
      WHERE workspace_id = $1 AND (provider_message_id = ANY ($2::text[]) OR id = ANY ($3::text[]))
      ORDER BY created_at DESC LIMIT 10`,
    [keys.providerIds, keys.ownIds],
  );
}

export interface SentRecord {
  row: ClaimedMessage;
  providerType: string;
  providerId: string | null;
  /** Null when the provider names none (a push service may not). */
  providerMessageId: string | null;
  segments: number | null;
  content: Content;
  locale: string | null;
  variant: string | null;
}

/**
 * The provider accepted these sends: record them and stage their
 * `message.sent` facts in one statement (one commit, one round trip a
 * batch), so each fact reaches webhooks once per message. Only sends whose
 * claim still holds (same attempt, still `sending`) are recorded; answers how
 * many were.
 */
export async function markSent(records: SentRecord[]): Promise<number> {
  return (
    await recordSent<{ id: string }>(
      records,
      "m.id, m.workspace_id, m.contact_id, m.channel, m.campaign_id",
      "id",
    )
  ).length;
}

/** `markSent` answering the recorded messages' rows (a send made at once answers its message from them, not a read back). */
export async function markSentRows(records: SentRecord[]): Promise<MessageRow[]> {
  return recordSent<MessageRow>(records, "m.*", "*");
}

/** The statement of `markSent` and `markSentRows`: the updated rows' `columns`, of which it answers `answer`. */
async function recordSent<T>(records: SentRecord[], columns: string, answer: string): Promise<T[]> {
  if (!records.length) return [];
  const updates = records.map((r, n) => ({
    n,
    id: r.row.id,
    attempts: r.row.attempts,
    provider_type: r.providerType,
    provider_id: r.providerId,
    provider_message_id: r.providerMessageId,
    segments: r.segments,
    content: r.content,
    locale: r.locale,
    variant: r.variant,
  }));
  // Prepared, on pg directly: the bound JSON holds every rendered message (megabytes a batch). The facts
  // are staged in the batch's order, the order of its sends.
  const updated = await queryAcrossWorkspacesPrepared<T>(
    `WITH u AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS u(n integer, id text, attempts integer, provider_type text,
                provider_id text, provider_message_id text, segments integer, content jsonb, locale text, variant text)),
     sent AS (
       UPDATE messages m SET status = 'sent', sent_at = now(), lease_until = NULL, provider_type = u.provider_type,
              provider_id = u.provider_id, provider_message_id = u.provider_message_id, segments = u.segments, content = u.content,
              locale = u.locale, variant = u.variant, error = NULL, updated_at = now(), history = m.${historyEntry("sent")}
         FROM u
        WHERE m.id = u.id AND m.attempts = u.attempts AND m.status = 'sending'
        RETURNING ${columns}, u.n),
     staged AS (
       INSERT INTO domain_event_outbox (workspace_id, type, data)
       SELECT workspace_id, 'message.sent',
              jsonb_build_object('contactId', contact_id, 'channel', channel, 'messageId', id, 'status', 'sent',
                                 'campaignId', campaign_id)
         FROM sent ORDER BY n)
     SELECT ${answer} FROM sent`,
    [JSON.stringify(updates)],
  );
  if (updated.length) wakeOutboxRelays();
  return updated;
}

/** A permanent failure (or retries spent): the message fails with the reason. */
export async function markFailed(row: ClaimedMessage, error: string): Promise<void> {
  await queryAcrossWorkspaces(
    `UPDATE messages SET status = 'failed', error = $3, lease_until = NULL, updated_at = now(), history = ${historyEntry("failed", "$3::text")}
      WHERE id = $1 AND attempts = $2 AND status = 'sending'`,
    [row.id, row.attempts, error.slice(0, 2000)],
  );
}

/** The provider refuses because the recipient opted out with it: suppressed with the reason, not failed. */
export async function markSuppressed(row: ClaimedMessage, reason: string, error: string): Promise<void> {
  await queryAcrossWorkspaces(
    `UPDATE messages SET status = 'suppressed', reason = $3, error = $4, lease_until = NULL, updated_at = now(),
            history = ${historyEntry("suppressed", "$3::text")}
      WHERE id = $1 AND attempts = $2 AND status = 'sending'`,
    [row.id, row.attempts, reason, error.slice(0, 2000)],
  );
}

/** A transient failure: back to the queue, due at `at`. */
export async function retryAt(row: ClaimedMessage, at: Date, error: string): Promise<void> {
  await queryAcrossWorkspaces(
    `UPDATE messages SET status = 'queued', send_at = $3, error = $4, lease_until = NULL, updated_at = now()
      WHERE id = $1 AND attempts = $2 AND status = 'sending'`,
    [row.id, row.attempts, at, error.slice(0, 2000)],
  );
}

/** Hand a claimed send back untouched (the provider's rate limit is spent; the claim does not count). */
export async function release(row: ClaimedMessage, at: Date): Promise<void> {
  await queryAcrossWorkspaces(
    `UPDATE messages SET status = 'queued', send_at = $3, attempts = attempts - 1, lease_until = NULL, updated_at = now()
      WHERE id = $1 AND attempts = $2 AND status = 'sending'`,
    [row.id, row.attempts, at],
  );
}

/** Hand claimed sends back at once, untouched (a stopping worker's sends it did not start). */
export async function releaseAll(rows: ClaimedMessage[]): Promise<void> {
  if (!rows.length) return;
  await queryAcrossWorkspaces(
    `UPDATE messages m SET status = 'queued', send_at = now(), attempts = m.attempts - 1, lease_until = NULL, updated_at = now()
       FROM unnest($1::text[], $2::int[]) AS r(id, attempts)
      WHERE m.id = r.id AND m.attempts = r.attempts AND m.status = 'sending'`,
    [rows.map((r) => r.id), rows.map((r) => r.attempts)],
  );
}

/**
 * Count a person's open: the status moves forward (sent or delivered →
 * opened) and `openedAt` is set once. (A machine's open is only recorded as
 * an event.) Null when the message does not exist.
 */
export async function recordOpen(id: string): Promise<EngagedRow | null> {
  return engage(
    id,
    `opens = opens + 1, opened_at = coalesce(opened_at, now()), updated_at = now(),
     status = CASE WHEN m.status IN ('sent', 'delivered') THEN 'opened' ELSE m.status END,
     history = CASE WHEN m.status IN ('sent', 'delivered') THEN ${historyEntry("opened")} ELSE history END`,
  );
}

/** Count a person's click (a click is also an open); a machine's click leaves the message as it was. */
export async function recordClick(id: string): Promise<EngagedRow | null> {
  return engage(
    id,
    `clicks = clicks + 1, clicked_at = coalesce(clicked_at, now()),
     opened_at = coalesce(opened_at, now()), updated_at = now(),
     status = CASE WHEN m.status IN ('sent', 'delivered', 'opened') THEN 'clicked' ELSE m.status END,
     history = CASE WHEN m.status IN ('sent', 'delivered', 'opened') THEN ${historyEntry("clicked")} ELSE history END`,
  );
}

/** A message after an open or click, and whether that moved its status (the business metrics count the move). */
export type EngagedRow = MessageRow & { status_moved: boolean };

/** The row is locked first, so the status it had is the one the update moved from. */
async function engage(id: string, set: string): Promise<EngagedRow | null> {
  const [row] = await queryAcrossWorkspaces<EngagedRow>(
    `WITH before AS (SELECT id, status FROM messages WHERE id = $1 FOR UPDATE)
     UPDATE messages m SET ${set}
       FROM before WHERE m.id = before.id
     RETURNING m.*, m.status <> before.status AS status_moved`,
    [id],
  );
  return row ?? null;
}

/** Per-variant figures of a template's sends (A/B statistics). */
export async function variantStats(
  workspaceId: WorkspaceId,
  templateId: string,
): Promise<Array<{ variant: string; sent: number; opened: number; clicked: number }>> {
  const rows = await query<{ variant: string; sent: string; opened: string; clicked: string }>(
    workspaceId,
    `SELECT variant, count(*) FILTER (WHERE sent_at IS NOT NULL) AS sent,
            count(*) FILTER (WHERE opened_at IS NOT NULL) AS opened, count(*) FILTER (WHERE clicked_at IS NOT NULL) AS clicked
       FROM messages WHERE workspace_id = $1 AND template_id = $2 AND variant IS NOT NULL GROUP BY variant`,
    [templateId],
  );
  return rows.map((r) => ({
    variant: r.variant,
    sent: Number(r.sent),
    opened: Number(r.opened),
    clicked: Number(r.clicked),
  }));
}

/** The short-link code of each URL for (template, campaign), created when missing (8 base62 characters). */
export async function shortLinkCodes(
  workspaceId: WorkspaceId,
  templateId: string | null,
  campaignId: string | null,
  urls: string[],
): Promise<Map<string, string>> {
  const codes = new Map<string, string>();
  if (!urls.length) return codes;
  // Sorted, so concurrent batches lock known links in one order and cannot deadlock.
  const unique = [...new Set(urls)].sort();
  // One statement through the identity index: new links get a code, known ones answer theirs (the
  // no-op update is what makes RETURNING include them).
  const rows = await query<{ url: string; code: string }>(
    workspaceId,
    `INSERT INTO short_links (code, workspace_id, template_id, campaign_id, url)
     SELECT v.code, $1, $2, $3, v.url FROM unnest($4::text[], $5::text[]) AS v(url, code)
     ON CONFLICT (workspace_id, coalesce(template_id, ''), coalesce(campaign_id, ''), url)
       DO UPDATE SET url = EXCLUDED.url
     RETURNING url, code`,
    [templateId, campaignId, unique, unique.map(() => randomBase62(8))],
  );
  for (const r of rows) codes.set(r.url, r.code);
  return codes;
}

const LINK_URL = `SELECT url FROM short_links WHERE workspace_id = $1 AND code = $2`;

/** A short link's URL, nothing recorded (a HEAD asks where a click would go). */
export async function linkUrl(workspaceId: WorkspaceId, code: string): Promise<string | null> {
  const [link] = await query<{ url: string }>(workspaceId, LINK_URL, [code]);
  return link?.url ?? null;
}

/**
 * Count a click on a short link from a message, and whether it looks like a
 * link scanner's: other links of the same message first clicked within
 * `burstMs` (a person opens one link; a scanner follows them all at once).
 * The link's unique click is the person's first, whoever clicked before.
 */
export async function recordLinkClick(
  workspaceId: WorkspaceId,
  code: string,
  messageId: string,
  contactId: string | null,
  burstMs: number,
  machine: boolean,
): Promise<{ url: string; burst: boolean } | null> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const [link] = await query<{ url: string }>(workspaceId, LINK_URL, [code], transaction);
    if (!link) return null;
    const [{ burst }] = await queryAcrossWorkspaces<{ burst: boolean }>(
      `SELECT count(*) >= 2 AS burst FROM short_link_clicks
        WHERE message_id = $1 AND code <> $2 AND first_at > now() - $3 * interval '1 millisecond'`,
      [messageId, code, burstMs],
      transaction,
    );
    const person = !machine && !burst;
    const [{ personClicks }] = await query<{ personClicks: number }>(
      workspaceId,
      `INSERT INTO short_link_clicks (code, message_id, workspace_id, contact_id, person_clicks) VALUES ($2, $3, $1, $4, $5)
       ON CONFLICT (code, message_id) DO UPDATE SET clicks = short_link_clicks.clicks + 1,
         person_clicks = short_link_clicks.person_clicks + EXCLUDED.person_clicks, last_at = now()
       RETURNING person_clicks AS "personClicks"`,
      [code, messageId, contactId, person ? 1 : 0],
      transaction,
    );
    if (person)
      await queryAcrossWorkspaces(
        `UPDATE short_links SET clicks = clicks + 1, unique_clicks = unique_clicks + $2, updated_at = now() WHERE code = $1`,
        [code, personClicks === 1 ? 1 : 0],
        transaction,
      );
    return { url: link.url, burst };
  });
}

export async function listShortLinks(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: { campaignId?: string; templateId?: string },
): Promise<Page<ShortLinkView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filter.campaignId) where.push(`campaign_id = ${binds.p(filter.campaignId)}`);
  if (filter.templateId) where.push(`template_id = ${binds.p(filter.templateId)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM short_links WHERE ${clause}`, orderBy: "created_at DESC, code" },
    binds.values,
    page,
    (r: {
      code: string;
      url: string;
      template_id: string | null;
      campaign_id: string | null;
      clicks: number;
      unique_clicks: number;
      created_at: Date;
      updated_at: Date;
    }) => ({
      id: r.code,
      code: r.code,
      url: r.url,
      templateId: r.template_id,
      campaignId: r.campaign_id,
      clicks: r.clicks,
      uniqueClicks: r.unique_clicks,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    }),
  );
}

/**
 * Retention: what a purge before `before` deletes, in batches oldest first
 * (lib/retention.ts). Messages by their created time, except those still
 * queued or sending (a scheduled send is not data to expire). Their push
 * deliveries go with them (ON DELETE CASCADE); clicks, inbox links and
 * callbacks keep the message's id as history.
 */
export const { countBefore, deleteBefore } = retentionPurge(
  { table: "messages", timeColumn: "created_at", keep: `status IN ('queued', 'sending')` },
  queryPrepared,
);
