import { MicroBatcher } from "../../lib/batcher";
import { Binds, database, query, queryAcrossWorkspaces } from "../../lib/database";
import { stageDomainEvents, wakeOutboxRelays } from "../../lib/outbox";
import { audienceSource, type Audience } from "./broadcasts.repo";
import type { EnrollmentView } from "./campaigns.schemas";
import { type EnrollmentRow, enrollmentView } from "./enrollments.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** The statements that enroll contacts (`campaign_enrollments` inserts, each staging `campaign.contact.enrolled`). Workspace id first. */

/**
 * The re-entry rule as a condition on the contact `alias` of campaign `$2`:
 * `once`, none before; `cooldown`, none within the hours; else nothing.
 */
function reentryCondition(
  reentry: string,
  cooldownHours: number | null | undefined,
  binds: Binds,
  alias: string,
): string {
  const earlier = `SELECT 1 FROM campaign_enrollments p WHERE p.campaign_id = $2 AND p.contact_id = ${alias}.id`;
  if (reentry === "once") return `AND NOT EXISTS (${earlier})`;
  if (reentry === "cooldown")
    return `AND NOT EXISTS (${earlier} AND p.created_at > now() - make_interval(hours => ${binds.p(cooldownHours ?? 24)}::int))`;
  return "";
}

/** The CTE that stages `campaign.contact.enrolled` for the rows of `enrolled` (each with its workspace), in the same statement. */
const STAGE_ENROLLED = `staged AS (
              INSERT INTO domain_event_outbox (workspace_id, type, data)
              SELECT workspace_id, 'campaign.contact.enrolled', jsonb_build_object('campaignId', campaign_id, 'contactId', contact_id)
                FROM enrolled)`;

export interface EnrollRequest {
  campaignId: string;
  version: number;
  contactIds: string[];
  triggerId: string | null;
  event: Record<string, unknown> | null;
  /** `manual`: only a live enrollment stops it; the others as the trigger's re-entry rule says. */
  reentry: "manual" | "once" | "always" | "cooldown";
  cooldownHours?: number | null;
  /** Per contact, what caused its enrollment (a membership log row): one cause enrolls once. */
  sourceKeys?: string[];
}

/**
 * Enroll contacts of the workspace (unknown ones are skipped), each due at
 * once; one live enrollment per contact and campaign (the unique index), and
 * `once` / `cooldown` against the earlier ones. Stages
 * `campaign.contact.enrolled` for each in the same transaction. Answers the
 * new enrollments.
 */
export async function enroll(workspaceId: WorkspaceId, r: EnrollRequest): Promise<EnrollmentView[]> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const binds = Binds.inWorkspace([
      r.campaignId,
      r.version,
      r.contactIds,
      r.triggerId,
      r.event ? JSON.stringify(r.event) : null,
      r.sourceKeys ?? r.contactIds.map(() => null),
    ]);
    const earlier = reentryCondition(r.reentry, r.cooldownHours, binds, "c");
    // Any unique key taken (a live enrollment, a cause already enrolled) leaves that contact out.
    const rows = await query<EnrollmentRow>(
      workspaceId,
      `INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, run_at, trigger_id, event, source_key)
       SELECT gen_random_uuid()::text, $1, $2, c.id, $3, 'active', now(), $5, $6::jsonb, k.source_key
         FROM unnest($4::text[], $7::text[]) AS k(contact_id, source_key)
         JOIN contacts c ON c.workspace_id = $1 AND c.id = k.contact_id
        WHERE true ${earlier}
       ON CONFLICT DO NOTHING
       RETURNING *`,
      binds.values,
      transaction,
    );
    await stageDomainEvents(
      transaction,
      workspaceId,
      rows.map((e) => ({
        type: "campaign.contact.enrolled",
        data: { campaignId: e.campaign_id, contactId: e.contact_id },
      })),
    );
    return rows.map(enrollmentView);
  });
}

interface MatchedTrigger {
  id: string;
  campaign_id: string;
  published_version: number;
  reentry: "once" | "always" | "cooldown";
  cooldown_hours: number | null;
}

interface TriggeredEnrollment {
  workspaceId: WorkspaceId;
  contactId: string;
  triggers: MatchedTrigger[];
  event: Record<string, unknown>;
}

/**
 * Enroll one contact by every trigger an event matched: each campaign's
 * re-entry rule against its earlier enrollments, one live enrollment per
 * campaign, `campaign.contact.enrolled` staged by the same statement.
 * Concurrent events' enrollments go together (lib/batcher.ts), one statement
 * and its own transaction for all. Answers how many.
 */
export function enrollByTriggers(
  workspaceId: WorkspaceId,
  contactId: string,
  triggers: MatchedTrigger[],
  event: Record<string, unknown>,
): Promise<number> {
  if (!triggers.length) return Promise.resolve(0);
  return triggerEnrollments.add({ workspaceId, contactId, triggers, event });
}

const triggerEnrollments = new MicroBatcher(
  async (items: TriggeredEnrollment[]): Promise<number[]> => {
    const rows = items.flatMap((item, n) => item.triggers.map((t) => ({ n, item, t })));
    const enrolled = await queryAcrossWorkspaces<{ n: number }>(
      `WITH t AS (
              SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::int[], $9::text[])
                AS t(n, workspace_id, contact_id, campaign_id, version, trigger_id, reentry, cooldown_hours, event)),
            enrolled AS (
              INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, run_at, trigger_id, event)
              SELECT gen_random_uuid()::text, t.workspace_id, t.campaign_id, t.contact_id, t.version, 'active', now(), t.trigger_id,
                     t.event::jsonb
                FROM t
               -- OFFSET 0 keeps this a probe of the primary key per row, never a hash of the contacts table.
               WHERE EXISTS (SELECT 1 FROM contacts c WHERE c.workspace_id = t.workspace_id AND c.id = t.contact_id OFFSET 0)
                 AND (t.reentry = 'always'
                      OR NOT EXISTS (SELECT 1 FROM campaign_enrollments p WHERE p.campaign_id = t.campaign_id AND p.contact_id = t.contact_id
                                      AND (t.reentry = 'once'
                                           OR p.created_at > now() - make_interval(hours => COALESCE(t.cooldown_hours, 24)))))
              ON CONFLICT DO NOTHING
              RETURNING workspace_id, campaign_id, contact_id, trigger_id),
            ${STAGE_ENROLLED}
       SELECT min(t.n) AS n
         FROM enrolled e JOIN t ON t.contact_id = e.contact_id AND t.campaign_id = e.campaign_id AND t.trigger_id = e.trigger_id
        GROUP BY e.campaign_id, e.contact_id`,
      [
        rows.map((r) => r.n),
        rows.map((r) => r.item.workspaceId),
        rows.map((r) => r.item.contactId),
        rows.map((r) => r.t.campaign_id),
        rows.map((r) => r.t.published_version),
        rows.map((r) => r.t.id),
        rows.map((r) => r.t.reentry),
        rows.map((r) => r.t.cooldown_hours),
        rows.map((r) => JSON.stringify(r.item.event)),
      ],
    );
    // Each enrollment counts for the first event that asked for it.
    const counts = items.map(() => 0);
    for (const row of enrolled) counts[row.n] += 1;
    if (enrolled.length) wakeOutboxRelays();
    return counts;
  },
  { maxBatch: 200, lanes: 1 },
);

/**
 * Enroll a whole audience in one statement (never in memory), staging
 * `campaign.contact.enrolled` for each by the same statement; the ones
 * enrolled already are left. Answers how many were enrolled and how many
 * the audience held.
 */
export async function enrollAudience(
  workspaceId: WorkspaceId,
  campaignId: string,
  version: number,
  audience: Audience,
): Promise<{ enrolled: number; total: number }> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const binds = Binds.inWorkspace([campaignId, version]);
    const source = audienceSource(audience, binds);
    const [row] = await query<{ enrolled: string; total: string }>(
      workspaceId,
      `WITH audience AS (${source}),
            enrolled AS (
              INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, run_at)
              SELECT gen_random_uuid()::text, $1, $2, a.id, $3, 'active', now() FROM audience a(id)
              ON CONFLICT DO NOTHING
              RETURNING workspace_id, campaign_id, contact_id),
            ${STAGE_ENROLLED}
       SELECT (SELECT count(*) FROM enrolled) AS enrolled, (SELECT count(*) FROM audience) AS total`,
      binds.values,
      transaction,
    );
    transaction.afterCommit(wakeOutboxRelays);
    return { enrolled: Number(row.enrolled), total: Number(row.total) };
  });
}

/**
 * A `date_anniversary` trigger's pass, one statement: the contacts of its
 * workspace whose date (`fieldSql`) falls, month and day, `offsetDays`
 * before today in their time zone (else the workspace's, else UTC), once
 * the local time is past `time`, are enrolled (each once that day: the day
 * is the enrollment's cause; re-entry as the trigger says), with their
 * enrolled facts. Answers how many.
 */
export async function enrollAnniversaries(
  trigger: {
    id: string;
    workspace_id: WorkspaceId;
    campaign_id: string;
    published_version: number;
    reentry: "once" | "always" | "cooldown";
    cooldown_hours: number | null;
  },
  field: (binds: Binds) => string,
  offsetDays: number,
  time: string,
): Promise<number> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const binds = Binds.inWorkspace([trigger.campaign_id, trigger.published_version, trigger.id]);
    const day = field(binds);
    const earlier = reentryCondition(trigger.reentry, trigger.cooldown_hours, binds, "d");
    const [row] = await query<{ enrolled: string }>(
      trigger.workspace_id,
      `WITH local AS (
              SELECT c.id, ${day}::date AS day,
                     now() AT TIME ZONE COALESCE(NULLIF(c.timezone, ''), NULLIF(w.settings ->> 'timezone', ''), 'UTC') AS at
                FROM contacts c JOIN workspaces w ON w.id = c.workspace_id
               WHERE c.workspace_id = $1 AND ${day} IS NOT NULL),
            due AS (
              SELECT d.id, d.at::date AS today FROM local d
               WHERE d.at::time >= ${binds.p(time)}::time
                 AND to_char(d.at::date - ${binds.p(offsetDays)}::int, 'MM-DD') = to_char(d.day, 'MM-DD')),
            enrolled AS (
              INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, run_at, trigger_id, source_key)
              SELECT gen_random_uuid()::text, $1, $2, d.id, $3, 'active', now(), $4, 'anniversary:' || d.id || ':' || d.today
                FROM due d WHERE true ${earlier}
              ON CONFLICT DO NOTHING
              RETURNING workspace_id, campaign_id, contact_id),
            ${STAGE_ENROLLED}
       SELECT count(*) AS enrolled FROM enrolled`,
      binds.values,
      transaction,
    );
    transaction.afterCommit(wakeOutboxRelays);
    return Number(row.enrolled);
  });
}

/** Which of the contacts the workspace has, and which of those are enrolled in the campaign now. */
export async function enrollable(workspaceId: WorkspaceId, campaignId: string, contactIds: string[]) {
  const rows = await query<{ id: string; live: boolean }>(
    workspaceId,
    `SELECT c.id, EXISTS (SELECT 1 FROM campaign_enrollments e WHERE e.campaign_id = $2 AND e.contact_id = c.id
                           AND e.status IN ('active', 'waiting')) AS live
       FROM contacts c WHERE c.workspace_id = $1 AND c.id = ANY ($3::text[])`,
    [campaignId, contactIds],
  );
  return new Map(rows.map((r) => [r.id, r.live]));
}
