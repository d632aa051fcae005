import { Sequelize } from "sequelize";

/** Users, workspaces, members, API keys, audit log, password resets. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE EXTENSION IF NOT EXISTS pg_trgm;

    CREATE TABLE users (
      id            text PRIMARY KEY,
      name          text NOT NULL,
      email         text NOT NULL UNIQUE,
      password_hash text NOT NULL,
      created_at    timestamptz NOT NULL DEFAULT now(),
      updated_at    timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE workspaces (
      id         text PRIMARY KEY,
      name       text NOT NULL,
      slug       text NOT NULL UNIQUE,
      settings   jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE members (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      user_id      text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      role         text NOT NULL CHECK (role IN ('OWNER','ADMIN','MEMBER','VIEWER')),
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, user_id)
    );
    CREATE INDEX members_user_idx ON members (user_id);

    CREATE TABLE api_keys (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      key_hash     text NOT NULL UNIQUE,
      last_four    text NOT NULL,
      scopes       jsonb NOT NULL DEFAULT '[]'::jsonb,
      expires_at   timestamptz,
      last_used_at timestamptz,
      revoked_at   timestamptz,
      created_by   text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id, created_at DESC);

    CREATE TABLE audit_logs (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      actor_type   text NOT NULL,
      actor_id     text,
      action       text NOT NULL,
      target_type  text,
      target_id    text,
      ip           text,
      metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX audit_logs_workspace_idx ON audit_logs (workspace_id, created_at DESC, id DESC);

    CREATE TABLE password_reset_tokens (
      id         text PRIMARY KEY,
      user_id    text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      expires_at timestamptz NOT NULL,
      used_at    timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}
