import { Sequelize } from "sequelize";

/**
 * Tasks and the per-user notifications they raise. A due task is claimed
 * once (`due_notified_at`) by whichever replica runs the due check; the
 * notification's `dedupe_key` makes a second insert for the same due date a no-op.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE tasks (
      id              text PRIMARY KEY,
      workspace_id    text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      title           text NOT NULL,
      description     text,
      type            text NOT NULL DEFAULT 'todo',
      priority        text NOT NULL DEFAULT 'normal',
      due_at          timestamptz,
      assignee_id     text REFERENCES users(id) ON DELETE SET NULL,
      contact_id      text REFERENCES contacts(id) ON DELETE SET NULL,
      company_id      text REFERENCES companies(id) ON DELETE SET NULL,
      deal_id         text REFERENCES deals(id) ON DELETE SET NULL,
      completed_at    timestamptz,
      completed_by    text,
      due_notified_at timestamptz,
      created_by      text,
      created_at      timestamptz NOT NULL DEFAULT now(),
      updated_at      timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX tasks_created_idx ON tasks (workspace_id, created_at DESC, id DESC);
    CREATE INDEX tasks_assignee_idx ON tasks (workspace_id, assignee_id, due_at);
    CREATE INDEX tasks_due_pending_idx ON tasks (due_at)
      WHERE completed_at IS NULL AND due_notified_at IS NULL AND assignee_id IS NOT NULL AND due_at IS NOT NULL;

    CREATE TABLE notifications (
      id            text PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      user_id       text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      type          text NOT NULL,
      title         text NOT NULL,
      body          text,
      resource_type text,
      resource_id   text,
      data          jsonb NOT NULL DEFAULT '{}'::jsonb,
      dedupe_key    text UNIQUE,
      read_at       timestamptz,
      created_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX notifications_user_idx ON notifications (workspace_id, user_id, created_at DESC, id DESC);
    CREATE INDEX notifications_unread_idx ON notifications (workspace_id, user_id) WHERE read_at IS NULL;
  `);
}
