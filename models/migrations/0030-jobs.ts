import { Sequelize } from "sequelize";

/** Long-running work with progress, listed at `{ws}/jobs`. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE jobs (
      id             text PRIMARY KEY,
      workspace_id   text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      type           text NOT NULL,
      status         text NOT NULL CHECK (status IN ('queued','running','completed','failed','cancelled')),
      progress_done  integer NOT NULL DEFAULT 0,
      progress_total integer,
      result         jsonb,
      error          text,
      created_by     text,
      heartbeat_at   timestamptz,
      created_at     timestamptz NOT NULL DEFAULT now(),
      started_at     timestamptz,
      finished_at    timestamptz
    );
    CREATE INDEX jobs_workspace_idx ON jobs (workspace_id, created_at DESC, id DESC);
    CREATE INDEX jobs_running_idx ON jobs (heartbeat_at) WHERE status = 'running';
  `);
}
