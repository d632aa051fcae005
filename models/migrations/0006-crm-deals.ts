import { Sequelize } from "sequelize";

/**
 * Companies, pipelines (ordered stages kept as a JSON array on the pipeline),
 * deals and their stage history. References to contacts and companies are
 * cleared, not cascaded, when the referenced record goes: a deal is a
 * business record that outlives the person it was made with.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE companies (
      id             text PRIMARY KEY,
      workspace_id   text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name           text NOT NULL,
      domain         text,
      website        text,
      industry       text,
      employee_count integer,
      annual_revenue numeric(18, 2),
      currency       text,
      phone          text,
      description    text,
      address        jsonb NOT NULL DEFAULT '{}'::jsonb,
      owner_id       text REFERENCES users(id) ON DELETE SET NULL,
      tags           text[] NOT NULL DEFAULT '{}',
      attributes     jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_by     text,
      created_at     timestamptz NOT NULL DEFAULT now(),
      updated_at     timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX companies_domain_uq ON companies (workspace_id, domain) WHERE domain IS NOT NULL;
    CREATE INDEX companies_created_idx ON companies (workspace_id, created_at DESC, id DESC);
    CREATE INDEX companies_search_idx ON companies USING gin ((lower(name || ' ' || coalesce(domain, ''))) gin_trgm_ops);

    CREATE TABLE pipelines (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      stages       jsonb NOT NULL DEFAULT '[]'::jsonb,
      is_default   boolean NOT NULL DEFAULT false,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX pipelines_name_uq ON pipelines (workspace_id, lower(name));
    CREATE UNIQUE INDEX pipelines_default_uq ON pipelines (workspace_id) WHERE is_default;

    CREATE TABLE deals (
      id                  text PRIMARY KEY,
      workspace_id        text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      title               text NOT NULL,
      value               numeric(18, 2) NOT NULL DEFAULT 0,
      currency            text NOT NULL,
      pipeline_id         text NOT NULL REFERENCES pipelines(id),
      stage_id            text NOT NULL,
      status              text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'won', 'lost')),
      contact_id          text REFERENCES contacts(id) ON DELETE SET NULL,
      company_id          text REFERENCES companies(id) ON DELETE SET NULL,
      owner_id            text REFERENCES users(id) ON DELETE SET NULL,
      expected_close_date date,
      closed_at           timestamptz,
      lost_reason         text,
      description         text,
      tags                text[] NOT NULL DEFAULT '{}',
      attributes          jsonb NOT NULL DEFAULT '{}'::jsonb,
      stage_changed_at    timestamptz NOT NULL DEFAULT now(),
      created_by          text,
      created_at          timestamptz NOT NULL DEFAULT now(),
      updated_at          timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX deals_created_idx ON deals (workspace_id, created_at DESC, id DESC);
    CREATE INDEX deals_stage_idx ON deals (workspace_id, pipeline_id, stage_id);
    CREATE INDEX deals_contact_idx ON deals (contact_id) WHERE contact_id IS NOT NULL;
    CREATE INDEX deals_company_idx ON deals (company_id) WHERE company_id IS NOT NULL;
    CREATE INDEX deals_search_idx ON deals USING gin ((lower(title)) gin_trgm_ops);

    CREATE TABLE deal_stage_history (
      id            text PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      deal_id       text NOT NULL REFERENCES deals(id) ON DELETE CASCADE,
      from_stage_id text,
      to_stage_id   text NOT NULL,
      from_status   text,
      to_status     text NOT NULL,
      changed_by    text,
      changed_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX deal_stage_history_deal_idx ON deal_stage_history (deal_id, changed_at, id);
  `);
}
