import { MicroBatcher } from "../../lib/batcher";
import type { Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { Binds, database, likeEscape, queryPrepared, selectRows } from "../../lib/database";
import { stageDomainEvents, wakeOutboxRelays } from "../../lib/outbox";
import { sqlProbe } from "../../lib/versioned-cache";
import { audienceSource, type Audience } from "./broadcasts.repo";
import { pageOf, type Page, type PageRequest } from "../../lib/pagination";
import type {
  CampaignDetail,
  CampaignStatus,
  CampaignView,
  EnrollmentView,
  LogView,
  TriggerType,
  TriggerView,
  VersionView,
} from "./campaigns.schemas";
import type { Workflow } from "./workflow";

/** Every query of the campaigns area. Workspace id first. */

interface CampaignRow {
  id: string;
  name: string;
  type: "workflow" | "broadcast";
  status: CampaignStatus;
  scheduled_at: Date | null;
  priority: number;
  workflow: Workflow;
  draft_changed: boolean;
  published_version: number | null;
  enrolled: string;
  active: string;
  completed: string;
  exited: string;
  created_at: Date;
  updated_at: Date;
}

const SELECT_CAMPAIGN = `
  SELECT c.*, s.*
    FROM campaigns c
    CROSS JOIN LATERAL (
      SELECT count(*) AS enrolled,
             count(*) FILTER (WHERE e.status IN ('active', 'waiting')) AS active,
             count(*) FILTER (WHERE e.status = 'completed') AS completed,
             count(*) FILTER (WHERE e.status IN ('exited', 'failed')) AS exited
        FROM campaign_enrollments e WHERE e.campaign_id = c.id) s`;

const campaignView = (r: CampaignRow): CampaignView => ({
  id: r.id,
  name: r.name,
  type: r.type,
  status: r.status,
  scheduledAt: r.scheduled_at,
  priority: r.priority,
  publishedVersion: r.published_version,
  stats: {
    enrolled: Number(r.enrolled),
    active: Number(r.active),
    completed: Number(r.completed),
    exited: Number(r.exited),
  },
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function listCampaigns(
  workspaceId: string,
  page: PageRequest,
  filter: { status?: string; type?: string; search?: string },
): Promise<Page<CampaignView>> {
  const binds = new Binds([workspaceId]);
  const where = ["c.workspace_id = $1"];
  if (filter.status) where.push(`c.status = ${binds.p(filter.status)}`);
  if (filter.type) where.push(`c.type = ${binds.p(filter.type)}`);
  if (filter.search) where.push(`c.name ILIKE ${binds.p(`%${likeEscape(filter.search)}%`)}`);
  const clause = where.join(" AND ");
  const [rows, [{ n }]] = await Promise.all([
    selectRows<CampaignRow>(
      `${SELECT_CAMPAIGN} WHERE ${clause} ORDER BY c.created_at DESC, c.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      binds.values,
    ),
    selectRows<{ n: string }>(`SELECT count(*) AS n FROM campaigns c WHERE ${clause}`, binds.values),
  ]);
  return pageOf(rows.map(campaignView), Number(n), page);
}

export async function getCampaign(workspaceId: string, id: string): Promise<CampaignDetail | null> {
  const [row] = await selectRows<CampaignRow>(`${SELECT_CAMPAIGN} WHERE c.workspace_id = $1 AND c.id = $2`, [
    workspaceId,
    id,
  ]);
  if (!row) return null;
  return {
    ...campaignView(row),
    workflow: row.workflow as CampaignDetail["workflow"],
    draftChanged: row.draft_changed,
    triggers: await listTriggers(workspaceId, id),
  };
}

export async function insertCampaign(
  workspaceId: string,
  c: { id: string; name: string; type: "workflow" | "broadcast"; workflow: Workflow; priority: number },
): Promise<void> {
  await selectRows(
    `INSERT INTO campaigns (id, workspace_id, name, type, workflow, priority) VALUES ($1, $2, $3, $4, $5::jsonb, $6)`,
    [c.id, workspaceId, c.name, c.type, JSON.stringify(c.workflow), c.priority],
  );
}

/** Set the given fields (a new workflow marks the draft changed); false when the campaign does not exist. */
export async function updateCampaign(
  workspaceId: string,
  id: string,
  fields: {
    name?: string;
    status?: CampaignStatus;
    scheduledAt?: string | null;
    priority?: number;
    workflow?: Workflow;
  },
  transaction?: Transaction,
): Promise<boolean> {
  const binds = new Binds([workspaceId, id]);
  const sets = ["updated_at = now()"];
  if (fields.name !== undefined) sets.push(`name = ${binds.p(fields.name)}`);
  if (fields.status !== undefined) sets.push(`status = ${binds.p(fields.status)}`);
  if (fields.scheduledAt !== undefined)
    sets.push(`scheduled_at = ${binds.p(fields.scheduledAt)}::timestamptz`);
  if (fields.priority !== undefined) sets.push(`priority = ${binds.p(fields.priority)}`);
  if (fields.workflow !== undefined)
    sets.push(`workflow = ${binds.p(JSON.stringify(fields.workflow))}::jsonb`, "draft_changed = true");
  const rows = await selectRows<{ id: string }>(
    `UPDATE campaigns SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    binds.values,
    transaction,
  );
  return rows.length > 0;
}

export async function deleteCampaign(workspaceId: string, id: string): Promise<boolean> {
  const rows = await selectRows<{ id: string }>(
    `DELETE FROM campaigns WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [workspaceId, id],
  );
  return rows.length > 0;
}

/** A copy of a campaign's draft, triggers and priority as a new draft. */
export async function cloneCampaign(workspaceId: string, id: string, newCampaignId: string, name: string) {
  const sequelize = await database();
  await sequelize.transaction(async (transaction) => {
    await selectRows(
      `INSERT INTO campaigns (id, workspace_id, name, type, workflow, priority)
       SELECT $3, workspace_id, $4, type, workflow, priority FROM campaigns WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id, newCampaignId, name],
      transaction,
    );
    await selectRows(
      `INSERT INTO campaign_triggers (id, workspace_id, campaign_id, type, config, reentry, cooldown_hours, active)
       SELECT gen_random_uuid()::text, workspace_id, $3, type, config, reentry, cooldown_hours, active
         FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2 ORDER BY created_at`,
      [workspaceId, id, newCampaignId],
      transaction,
    );
  });
}

/* Triggers */

interface TriggerRow {
  id: string;
  campaign_id: string;
  type: TriggerType;
  config: Record<string, unknown>;
  reentry: "once" | "always" | "cooldown";
  cooldown_hours: number | null;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}
const triggerView = (r: TriggerRow): TriggerView => ({
  id: r.id,
  type: r.type,
  config: r.config,
  reentry: r.reentry,
  cooldownHours: r.cooldown_hours,
  active: r.active,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function listTriggers(workspaceId: string, campaignId: string): Promise<TriggerView[]> {
  const rows = await selectRows<TriggerRow>(
    `SELECT * FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2 ORDER BY created_at, id`,
    [workspaceId, campaignId],
  );
  return rows.map(triggerView);
}

export async function getTrigger(
  workspaceId: string,
  campaignId: string,
  id: string,
): Promise<TriggerView | null> {
  const [row] = await selectRows<TriggerRow>(
    `SELECT * FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2 AND id = $3`,
    [workspaceId, campaignId, id],
  );
  return row ? triggerView(row) : null;
}

export interface TriggerFields {
  type: TriggerType;
  config: Record<string, unknown>;
  reentry: "once" | "always" | "cooldown";
  cooldownHours: number | null;
  active: boolean;
}

export async function insertTrigger(workspaceId: string, campaignId: string, id: string, t: TriggerFields) {
  await selectRows(
    `INSERT INTO campaign_triggers (id, workspace_id, campaign_id, type, config, reentry, cooldown_hours, active)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8)`,
    [id, workspaceId, campaignId, t.type, JSON.stringify(t.config), t.reentry, t.cooldownHours, t.active],
  );
}

export async function updateTrigger(workspaceId: string, campaignId: string, id: string, t: TriggerFields) {
  await selectRows(
    `UPDATE campaign_triggers SET config = $4::jsonb, reentry = $5, cooldown_hours = $6, active = $7, updated_at = now()
      WHERE workspace_id = $1 AND campaign_id = $2 AND id = $3`,
    [workspaceId, campaignId, id, JSON.stringify(t.config), t.reentry, t.cooldownHours, t.active],
  );
}

export async function deleteTrigger(workspaceId: string, campaignId: string, id: string): Promise<boolean> {
  const rows = await selectRows<{ id: string }>(
    `DELETE FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2 AND id = $3 RETURNING id`,
    [workspaceId, campaignId, id],
  );
  return rows.length > 0;
}

/** Active triggers of `types` on active campaigns with a published version (of one workspace, or of all). */
export async function liveTriggers(workspaceId: string | null, types: TriggerType[]) {
  return selectRows<TriggerRow & { workspace_id: string; published_version: number }>(
    `SELECT t.*, c.published_version FROM campaign_triggers t JOIN campaigns c ON c.id = t.campaign_id
      WHERE ($1::text IS NULL OR t.workspace_id = $1) AND t.type = ANY ($2::text[]) AND t.active
        AND c.status = 'active' AND c.published_version IS NOT NULL`,
    [workspaceId, types],
  );
}

/* Versions */

interface VersionRow {
  id: string;
  number: number;
  workflow: Workflow;
  triggers: Array<Record<string, unknown>>;
  note: string | null;
  published_at: Date;
}
const versionView = (r: VersionRow): VersionView => ({
  id: r.id,
  number: r.number,
  workflow: r.workflow as VersionView["workflow"],
  triggers: r.triggers,
  note: r.note,
  publishedAt: r.published_at,
});

/**
 * Freeze the draft and the triggers as the next version, in one
 * transaction with the campaign's move to it (and to `status`, if given).
 */
export async function publishVersion(
  workspaceId: string,
  campaignId: string,
  note: string | null,
  status?: CampaignStatus,
): Promise<VersionView> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const [row] = await selectRows<VersionRow>(
      `WITH c AS (SELECT id, workflow FROM campaigns WHERE workspace_id = $1 AND id = $2 FOR UPDATE)
       INSERT INTO campaign_versions (id, workspace_id, campaign_id, number, workflow, triggers, note)
       SELECT $3, $1, c.id,
              COALESCE((SELECT max(number) FROM campaign_versions v WHERE v.campaign_id = c.id), 0) + 1,
              c.workflow,
              COALESCE((SELECT jsonb_agg(jsonb_build_object('id', t.id, 'type', t.type, 'config', t.config,
                          'reentry', t.reentry, 'cooldownHours', t.cooldown_hours, 'active', t.active) ORDER BY t.created_at)
                          FROM campaign_triggers t WHERE t.campaign_id = c.id), '[]'::jsonb),
              $4
         FROM c
       RETURNING *`,
      [workspaceId, campaignId, newId(), note],
      transaction,
    );
    await selectRows(
      `UPDATE campaigns SET published_version = $3, draft_changed = false, status = COALESCE($4, status), updated_at = now()
        WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, campaignId, row.number, status ?? null],
      transaction,
    );
    return versionView(row);
  });
}

export async function listVersions(
  workspaceId: string,
  campaignId: string,
  page: PageRequest,
): Promise<Page<VersionView>> {
  const [rows, [{ n }]] = await Promise.all([
    selectRows<VersionRow>(
      `SELECT * FROM campaign_versions WHERE workspace_id = $1 AND campaign_id = $2
        ORDER BY number DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      [workspaceId, campaignId],
    ),
    selectRows<{ n: string }>(
      `SELECT count(*) AS n FROM campaign_versions WHERE workspace_id = $1 AND campaign_id = $2`,
      [workspaceId, campaignId],
    ),
  ]);
  return pageOf(rows.map(versionView), Number(n), page);
}

export async function getVersion(
  workspaceId: string,
  campaignId: string,
  id: string,
): Promise<VersionView | null> {
  const [row] = await selectRows<VersionRow>(
    `SELECT * FROM campaign_versions WHERE workspace_id = $1 AND campaign_id = $2 AND id = $3`,
    [workspaceId, campaignId, id],
  );
  return row ? versionView(row) : null;
}

/** A version's workflow; versions never change, so callers may keep it. */
export async function versionWorkflow(campaignId: string, number: number): Promise<Workflow | null> {
  const [row] = await selectRows<{ workflow: Workflow }>(
    `SELECT workflow FROM campaign_versions WHERE campaign_id = $1 AND number = $2`,
    [campaignId, number],
  );
  return row?.workflow ?? null;
}

/** Copy a version's workflow and triggers into the draft (the draft then differs from the newest version). */
export async function restoreVersion(
  workspaceId: string,
  campaignId: string,
  version: VersionView,
): Promise<void> {
  const sequelize = await database();
  await sequelize.transaction(async (transaction) => {
    await updateCampaign(workspaceId, campaignId, { workflow: version.workflow as Workflow }, transaction);
    await selectRows(
      `DELETE FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2`,
      [workspaceId, campaignId],
      transaction,
    );
    await selectRows(
      `INSERT INTO campaign_triggers (id, workspace_id, campaign_id, type, config, reentry, cooldown_hours, active)
       SELECT t.id, $1, $2, t.type, t.config, t.reentry, t."cooldownHours", t.active
         FROM jsonb_to_recordset($3::jsonb) AS t(id text, type text, config jsonb, reentry text, "cooldownHours" integer, active boolean)`,
      [workspaceId, campaignId, JSON.stringify(version.triggers)],
      transaction,
    );
  });
}

/** Names of the campaigns, not archived, whose versions send `templateId`, and of broadcasts sending it now. */
export async function campaignsUsingTemplate(workspaceId: string, templateId: string): Promise<string[]> {
  const rows = await selectRows<{ name: string }>(
    `SELECT c.name FROM campaigns c
      WHERE c.workspace_id = $1 AND c.status <> 'archived'
        AND (EXISTS (SELECT 1 FROM campaign_versions v WHERE v.campaign_id = c.id
                      AND v.workflow -> 'nodes' @> jsonb_build_array(jsonb_build_object('type', 'send',
                            'config', jsonb_build_object('templateId', $2::text))))
             OR (c.type = 'broadcast' AND c.status IN ('active', 'paused') AND c.broadcast ->> 'templateId' = $2))
      ORDER BY c.name`,
    [workspaceId, templateId],
  );
  return rows.map((r) => r.name);
}

/** Scheduled campaigns whose time has come become active; answers how many. */
export async function activateScheduled(): Promise<number> {
  const rows = await selectRows<{ id: string }>(
    `UPDATE campaigns SET status = 'active', updated_at = now()
      WHERE status = 'scheduled' AND scheduled_at <= now() AND published_version IS NOT NULL RETURNING id`,
    [],
  );
  return rows.length;
}

/* Enrollments */

export interface EnrollmentRow {
  id: string;
  workspace_id: string;
  campaign_id: string;
  contact_id: string;
  version: number;
  status: EnrollmentView["status"];
  current_node_id: string | null;
  next_branch: string | null;
  waiting_until: Date | null;
  waiting_event: string | null;
  run_at: Date | null;
  trigger_id: string | null;
  event: Record<string, unknown> | null;
  exit_reason: string | null;
  finished_at: Date | null;
  created_at: Date;
  updated_at: Date;
}
const enrollmentView = (r: EnrollmentRow): EnrollmentView => ({
  id: r.id,
  campaignId: r.campaign_id,
  contactId: r.contact_id,
  version: r.version,
  status: r.status,
  currentNodeId: r.current_node_id,
  waitingUntil: r.waiting_until,
  triggerId: r.trigger_id,
  exitReason: r.exit_reason,
  finishedAt: r.finished_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

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
export async function enroll(workspaceId: string, r: EnrollRequest): Promise<EnrollmentView[]> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const binds = new Binds([
      workspaceId,
      r.campaignId,
      r.version,
      r.contactIds,
      r.triggerId,
      r.event ? JSON.stringify(r.event) : null,
      r.sourceKeys ?? r.contactIds.map(() => null),
    ]);
    const earlier = reentryCondition(r.reentry, r.cooldownHours, binds, "c");
    // Any unique key taken (a live enrollment, a cause already enrolled) leaves that contact out.
    const rows = await selectRows<EnrollmentRow>(
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
  workspaceId: string;
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
  workspaceId: string,
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
    const enrolled = await selectRows<{ n: number }>(
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
  workspaceId: string,
  campaignId: string,
  version: number,
  audience: Audience,
): Promise<{ enrolled: number; total: number }> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const binds = new Binds([workspaceId, campaignId, version]);
    const source = audienceSource(audience, binds);
    const [row] = await selectRows<{ enrolled: string; total: string }>(
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
    workspace_id: string;
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
    const binds = new Binds([
      trigger.workspace_id,
      trigger.campaign_id,
      trigger.published_version,
      trigger.id,
    ]);
    const day = field(binds);
    const earlier = reentryCondition(trigger.reentry, trigger.cooldown_hours, binds, "d");
    const [row] = await selectRows<{ enrolled: string }>(
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
export async function enrollable(workspaceId: string, campaignId: string, contactIds: string[]) {
  const rows = await selectRows<{ id: string; live: boolean }>(
    `SELECT c.id, EXISTS (SELECT 1 FROM campaign_enrollments e WHERE e.campaign_id = $2 AND e.contact_id = c.id
                           AND e.status IN ('active', 'waiting')) AS live
       FROM contacts c WHERE c.workspace_id = $1 AND c.id = ANY ($3::text[])`,
    [workspaceId, campaignId, contactIds],
  );
  return new Map(rows.map((r) => [r.id, r.live]));
}

/**
 * Take up to `limit` due enrollments of active campaigns, each leased for
 * `leaseMs` (its `run_at` moved on): a replica that dies mid-step leaves it
 * to be taken again when the lease ends.
 */
export async function claimDue(
  limit: number,
  leaseMs: number,
): Promise<Array<EnrollmentRow & { priority: number }>> {
  return selectRows<EnrollmentRow & { priority: number }>(
    `UPDATE campaign_enrollments e SET run_at = now() + make_interval(secs => $2::double precision / 1000)
      WHERE e.id IN (SELECT d.id FROM campaign_enrollments d JOIN campaigns c ON c.id = d.campaign_id
                      WHERE d.run_at <= now() AND c.status = 'active'
                      ORDER BY d.run_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED)
      RETURNING e.*, (SELECT c.priority FROM campaigns c WHERE c.id = e.campaign_id) AS priority`,
    [limit, leaseMs],
  );
}

export interface StepRecord {
  nodeId: string;
  outcome: "ok" | "branched" | "skipped" | "failed";
  branch: string | null;
  detail: string | null;
}

/** An enrollment's next state. `runAt` null: nothing more to run (finished). */
export interface NextStep {
  status: EnrollmentRow["status"];
  currentNodeId: string | null;
  runAt: Date | null;
  waitingUntil?: Date | null;
  waitingEvent?: string | null;
  exitReason?: string | null;
}

/** One enrollment's save: its next state with the logs of the steps that led there, in order. */
export interface StepSave {
  e: EnrollmentRow;
  next: NextStep;
  logs: StepRecord[];
}

/**
 * Enrollments' next states and their logs, in one statement for them all.
 * An enrollment that ended meanwhile (a goal, its campaign completed) stays
 * ended.
 */
export async function saveSteps(saves: StepSave[]): Promise<void> {
  if (!saves.length) return;
  const logs = saves.flatMap(({ e, logs }) => logs.map((l) => ({ e, l })));
  const finished = (status: string) => status === "completed" || status === "exited" || status === "failed";
  await queryPrepared(
    `WITH s AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::text[],
                            $8::boolean[])
              AS s(id, status, current_node_id, run_at, waiting_until, waiting_event, exit_reason, finished)
     ), logged AS (
       INSERT INTO campaign_logs (workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, branch, detail)
       SELECT l.workspace_id, l.campaign_id, l.enrollment_id, l.contact_id, l.node_id, l.outcome, l.branch, l.detail
         FROM unnest($9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[])
              WITH ORDINALITY AS l(workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, branch, detail, n)
        ORDER BY l.n)
     UPDATE campaign_enrollments e SET status = s.status, current_node_id = s.current_node_id, run_at = s.run_at,
            waiting_until = s.waiting_until, waiting_event = s.waiting_event, next_branch = NULL, exit_reason = s.exit_reason,
            finished_at = CASE WHEN s.finished THEN now() END, updated_at = now()
       FROM s
      WHERE e.id = s.id AND e.status IN ('active', 'waiting')`,
    [
      saves.map(({ e }) => e.id),
      saves.map(({ next }) => next.status),
      saves.map(({ next }) => next.currentNodeId),
      saves.map(({ next }) => next.runAt),
      saves.map(({ next }) => next.waitingUntil ?? null),
      saves.map(({ next }) => next.waitingEvent ?? null),
      saves.map(({ next }) => next.exitReason ?? null),
      saves.map(({ next }) => finished(next.status)),
      logs.map(({ e }) => e.workspace_id),
      logs.map(({ e }) => e.campaign_id),
      logs.map(({ e }) => e.id),
      logs.map(({ e }) => e.contact_id),
      logs.map(({ l }) => l.nodeId),
      logs.map(({ l }) => l.outcome),
      logs.map(({ l }) => l.branch),
      logs.map(({ l }) => l.detail),
    ],
  );
}

/** The contact's enrollments waiting for an event of `type`, each at its wait node. */
export async function waitingFor(workspaceId: string, contactId: string, type: string) {
  return selectRows<{ id: string; campaign_id: string; version: number; current_node_id: string }>(
    `SELECT id, campaign_id, version, current_node_id FROM campaign_enrollments
      WHERE workspace_id = $1 AND contact_id = $2 AND status = 'waiting' AND waiting_event = $3`,
    [workspaceId, contactId, type],
  );
}

/**
 * These waits end now, by their `event` branch; answers how many. Only a
 * wait no runner holds (its `run_at` is still its end): one taken at its
 * timeout goes on by the timeout.
 */
export async function resumeWaits(workspaceId: string, ids: string[]): Promise<number> {
  if (!ids.length) return 0;
  const rows = await selectRows<{ id: string }>(
    `UPDATE campaign_enrollments SET next_branch = 'event', run_at = now(), updated_at = now()
      WHERE workspace_id = $1 AND id = ANY ($2::text[]) AND status = 'waiting' AND run_at = waiting_until
      RETURNING id`,
    [workspaceId, ids],
  );
  return rows.length;
}

/**
 * The contact's live enrollments whose version has a goal on `type` complete
 * now, wherever they are in the graph; answers how many.
 */
export async function completeGoals(workspaceId: string, contactId: string, type: string): Promise<number> {
  const rows = await selectRows<{ id: string }>(
    `WITH reached AS (
       UPDATE campaign_enrollments e SET status = 'completed', exit_reason = 'goal', run_at = NULL, waiting_until = NULL,
              waiting_event = NULL, finished_at = now(), updated_at = now()
         FROM campaign_versions v
        WHERE e.workspace_id = $1 AND e.contact_id = $2 AND e.status IN ('active', 'waiting')
          AND v.campaign_id = e.campaign_id AND v.number = e.version
          AND v.workflow -> 'nodes' @> jsonb_build_array(jsonb_build_object('type', 'goal', 'config', jsonb_build_object('event', $3::text)))
       RETURNING e.*)
     INSERT INTO campaign_logs (workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, detail)
     SELECT r.workspace_id, r.campaign_id, r.id, r.contact_id,
            (SELECT n ->> 'id' FROM campaign_versions v, jsonb_array_elements(v.workflow -> 'nodes') n
              WHERE v.campaign_id = r.campaign_id AND v.number = r.version
                AND n ->> 'type' = 'goal' AND n -> 'config' ->> 'event' = $3 LIMIT 1),
            'ok', 'goal reached: ' || $3
       FROM reached r
     RETURNING enrollment_id`,
    [workspaceId, contactId, type],
  );
  return rows.length;
}

/**
 * The event types that goals and event waits of any version of the
 * workspace's active or paused campaigns name (an older version's too: its
 * enrollments may still be in it).
 */
export async function awaitedEventTypes(workspaceId: string): Promise<{ goals: string[]; waits: string[] }> {
  const [row] = await selectRows<{ goals: string[] | null; waits: string[] | null }>(
    `SELECT array_agg(DISTINCT n -> 'config' ->> 'event') FILTER (WHERE n ->> 'type' = 'goal') AS goals,
            array_agg(DISTINCT n -> 'config' -> 'event' ->> 'type') FILTER (WHERE n ->> 'type' = 'wait' AND n -> 'config' ? 'event') AS waits
       FROM campaigns c JOIN campaign_versions v ON v.campaign_id = c.id
       CROSS JOIN LATERAL jsonb_array_elements(v.workflow -> 'nodes') n
      WHERE c.workspace_id = $1 AND c.status IN ('active', 'paused')`,
    [workspaceId],
  );
  return { goals: row?.goals ?? [], waits: row?.waits ?? [] };
}

/** Whether the workspace has a campaign that is active or paused (the only ones with live enrollments). */
export async function hasLiveCampaigns(workspaceId: string): Promise<boolean> {
  const [row] = await selectRows<{ live: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM campaigns WHERE workspace_id = $1 AND status IN ('active', 'paused')) AS live`,
    [workspaceId],
  );
  return row.live;
}

/** A campaign's live enrollments end (`completed` or `archived` campaign): exited with `reason`. */
export async function exitLive(workspaceId: string, campaignId: string, reason: string): Promise<number> {
  const rows = await selectRows<{ id: string }>(
    `UPDATE campaign_enrollments SET status = 'exited', exit_reason = $3, run_at = NULL, waiting_until = NULL,
            waiting_event = NULL, finished_at = now(), updated_at = now()
      WHERE workspace_id = $1 AND campaign_id = $2 AND status IN ('active', 'waiting') RETURNING id`,
    [workspaceId, campaignId, reason],
  );
  return rows.length;
}

export async function listEnrollments(
  workspaceId: string,
  filter: { campaignId?: string; contactId?: string; status?: string },
  page: PageRequest,
): Promise<Page<EnrollmentView>> {
  const binds = new Binds([workspaceId]);
  const where = ["workspace_id = $1"];
  if (filter.campaignId) where.push(`campaign_id = ${binds.p(filter.campaignId)}`);
  if (filter.contactId) where.push(`contact_id = ${binds.p(filter.contactId)}`);
  if (filter.status) where.push(`status = ${binds.p(filter.status)}`);
  const clause = where.join(" AND ");
  const [rows, [{ n }]] = await Promise.all([
    selectRows<EnrollmentRow>(
      `SELECT * FROM campaign_enrollments WHERE ${clause} ORDER BY created_at DESC, id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      binds.values,
    ),
    selectRows<{ n: string }>(`SELECT count(*) AS n FROM campaign_enrollments WHERE ${clause}`, binds.values),
  ]);
  return pageOf(rows.map(enrollmentView), Number(n), page);
}

export async function listLogs(
  workspaceId: string,
  campaignId: string,
  filter: { enrollmentId?: string; contactId?: string; nodeId?: string },
  page: PageRequest,
): Promise<Page<LogView>> {
  const binds = new Binds([workspaceId, campaignId]);
  const where = ["workspace_id = $1", "campaign_id = $2"];
  if (filter.enrollmentId) where.push(`enrollment_id = ${binds.p(filter.enrollmentId)}`);
  if (filter.contactId) where.push(`contact_id = ${binds.p(filter.contactId)}`);
  if (filter.nodeId) where.push(`node_id = ${binds.p(filter.nodeId)}`);
  const clause = where.join(" AND ");
  const [rows, [{ n }]] = await Promise.all([
    selectRows<{
      id: string;
      enrollment_id: string;
      contact_id: string;
      node_id: string;
      outcome: LogView["outcome"];
      branch: string | null;
      detail: string | null;
      created_at: Date;
    }>(
      `SELECT * FROM campaign_logs WHERE ${clause} ORDER BY id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      binds.values,
    ),
    selectRows<{ n: string }>(`SELECT count(*) AS n FROM campaign_logs WHERE ${clause}`, binds.values),
  ]);
  return pageOf(
    rows.map((r) => ({
      id: String(r.id),
      enrollmentId: r.enrollment_id,
      contactId: r.contact_id,
      nodeId: r.node_id,
      outcome: r.outcome,
      branch: r.branch,
      detail: r.detail,
      createdAt: r.created_at,
    })),
    Number(n),
    page,
  );
}

/** Whether the message of a step was opened or clicked (on `url`, when given). */
export async function messageEngaged(
  workspaceId: string,
  contactId: string,
  messageId: string,
  kind: "opened" | "clicked",
  url?: string,
): Promise<boolean> {
  const [row] = await selectRows<{ yes: boolean }>(
    kind === "opened"
      ? `SELECT opened_at IS NOT NULL AS yes FROM messages WHERE workspace_id = $1 AND id = $2`
      : url
        ? `SELECT EXISTS (SELECT 1 FROM events WHERE workspace_id = $1 AND contact_id = $3 AND type = 'message.click'
                            AND metadata ->> 'messageId' = $2 AND metadata ->> 'url' = $4) AS yes`
        : `SELECT clicked_at IS NOT NULL AS yes FROM messages WHERE workspace_id = $1 AND id = $2`,
    url ? [workspaceId, messageId, contactId, url] : [workspaceId, messageId],
  );
  return row?.yes ?? false;
}

/** The version of a workspace's live campaigns and their triggers, for live-state.ts's cache. */
export const liveStateProbe = sqlProbe(
  "campaigns",
  `SELECT c.workspace_id,
            count(*) FILTER (WHERE c.status IN ('active', 'paused')) || '/' || max(c.updated_at)::text || '/' ||
            COALESCE((SELECT count(*) || '/' || max(t.updated_at)::text
                        FROM campaign_triggers t WHERE t.workspace_id = c.workspace_id), '') AS version
       FROM campaigns c WHERE c.workspace_id = ANY($1::text[]) GROUP BY c.workspace_id`,
);
