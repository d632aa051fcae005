import { Sequelize } from "sequelize";

/**
 * Saved reports (an analytics answer and its params) and their schedules
 * (contract-messaging 12). A schedule is a durable queue row: replicas claim
 * the due ones by `next_run_at` with FOR UPDATE SKIP LOCKED and move it on in
 * the same transaction; an inactive schedule has no next run.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE reports (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      endpoint     text NOT NULL,
      params       jsonb NOT NULL DEFAULT '{}',
      last_run_at  timestamptz,
      created_by   text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX reports_list_idx ON reports (workspace_id, created_at DESC, id DESC);

    CREATE TABLE report_schedules (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      report_id    text NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
      cron         text NOT NULL,
      timezone     text NOT NULL,
      recipients   text[] NOT NULL,
      active       boolean NOT NULL DEFAULT true,
      last_run_at  timestamptz,
      next_run_at  timestamptz,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      CHECK (active = (next_run_at IS NOT NULL))
    );
    CREATE INDEX report_schedules_list_idx ON report_schedules (workspace_id, created_at, id);
    CREATE INDEX report_schedules_due_idx ON report_schedules (next_run_at) WHERE active;
  `);
}
