import { Sequelize } from "sequelize";

/**
 * Campaigns: the draft workflow, live triggers, immutable published
 * versions, enrollments that advance as durable rows (`run_at`, claimed
 * with SKIP LOCKED by any replica) and the log of every step.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE campaigns (
      id                text PRIMARY KEY,
      workspace_id      text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name              text NOT NULL,
      type              text NOT NULL CHECK (type IN ('workflow', 'broadcast')),
      status            text NOT NULL DEFAULT 'draft'
                        CHECK (status IN ('draft', 'scheduled', 'active', 'paused', 'completed', 'archived')),
      scheduled_at      timestamptz,
      priority          integer NOT NULL DEFAULT 0,
      workflow          jsonb NOT NULL,
      -- The draft differs from the newest version (or there is none).
      draft_changed     boolean NOT NULL DEFAULT true,
      published_version integer,
      created_at        timestamptz NOT NULL DEFAULT now(),
      updated_at        timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX campaigns_workspace_idx ON campaigns (workspace_id, created_at DESC, id DESC);
    CREATE INDEX campaigns_scheduled_idx ON campaigns (scheduled_at) WHERE status = 'scheduled';

    CREATE TABLE campaign_triggers (
      id             text PRIMARY KEY,
      workspace_id   text NOT NULL,
      campaign_id    text NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      type           text NOT NULL,
      config         jsonb NOT NULL DEFAULT '{}',
      reentry        text NOT NULL DEFAULT 'once' CHECK (reentry IN ('once', 'always', 'cooldown')),
      cooldown_hours integer,
      active         boolean NOT NULL DEFAULT true,
      created_at     timestamptz NOT NULL DEFAULT now(),
      updated_at     timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX campaign_triggers_campaign_idx ON campaign_triggers (campaign_id, created_at);
    CREATE INDEX campaign_triggers_type_idx ON campaign_triggers (workspace_id, type) WHERE active;

    CREATE TABLE campaign_versions (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL,
      campaign_id  text NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      number       integer NOT NULL,
      workflow     jsonb NOT NULL,
      triggers     jsonb NOT NULL,
      note         text,
      published_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (campaign_id, number)
    );

    CREATE TABLE campaign_enrollments (
      id              text PRIMARY KEY,
      workspace_id    text NOT NULL,
      campaign_id     text NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      contact_id      text NOT NULL,
      version         integer NOT NULL,
      status          text NOT NULL CHECK (status IN ('active', 'waiting', 'completed', 'exited', 'failed')),
      current_node_id text,
      -- The branch the next step takes out of current_node_id (a wait's event or timeout).
      next_branch     text,
      waiting_until   timestamptz,
      -- A wait for an event: its type, so an event finds the enrollments it resumes.
      waiting_event   text,
      run_at          timestamptz,
      trigger_id      text,
      event           jsonb,
      exit_reason     text,
      finished_at     timestamptz,
      created_at      timestamptz NOT NULL DEFAULT now(),
      updated_at      timestamptz NOT NULL DEFAULT now()
    );
    -- One active enrollment per contact and campaign.
    CREATE UNIQUE INDEX campaign_enrollments_live_idx ON campaign_enrollments (campaign_id, contact_id)
      WHERE status IN ('active', 'waiting');
    CREATE INDEX campaign_enrollments_due_idx ON campaign_enrollments (run_at) WHERE run_at IS NOT NULL;
    CREATE INDEX campaign_enrollments_contact_idx ON campaign_enrollments (workspace_id, contact_id, created_at DESC);
    CREATE INDEX campaign_enrollments_campaign_idx ON campaign_enrollments (campaign_id, created_at DESC, id DESC);

    CREATE TABLE campaign_logs (
      id            bigserial PRIMARY KEY,
      workspace_id  text NOT NULL,
      campaign_id   text NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      enrollment_id text NOT NULL,
      contact_id    text NOT NULL,
      node_id       text NOT NULL,
      outcome       text NOT NULL CHECK (outcome IN ('ok', 'branched', 'skipped', 'failed')),
      branch        text,
      detail        text,
      created_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX campaign_logs_campaign_idx ON campaign_logs (campaign_id, id DESC);
    CREATE INDEX campaign_logs_enrollment_idx ON campaign_logs (enrollment_id, id);
  `);
}
