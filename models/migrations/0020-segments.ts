import { Sequelize } from "sequelize";

/**
 * Segments, their members and the log of entries and exits. Every change of
 * `segment_members` (ours, a contact's cascade delete, a merge's move) is
 * logged by statement-level triggers, so growth figures cannot drift. The
 * event that caused a change is read from the transaction-local setting
 * `segments.event_id`.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE segments (
      id            text PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name          text NOT NULL,
      description   text,
      type          text NOT NULL CHECK (type IN ('dynamic', 'static')),
      filter        jsonb,
      depends_on    text[] NOT NULL DEFAULT '{}',
      event_types   text[] NOT NULL DEFAULT '{}',
      uses_score    boolean NOT NULL DEFAULT false,
      computing     boolean NOT NULL DEFAULT false,
      created_at    timestamptz NOT NULL DEFAULT now(),
      updated_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX segments_workspace_idx ON segments (workspace_id, created_at DESC, id DESC);

    -- Deleting a contact or a segment removes its memberships (as ON DELETE CASCADE would), by the
    -- statement-level triggers below: a foreign key would lock every contact row a recompute adds
    -- (a full build of 100,000 members spent a third of its time in those checks).
    CREATE TABLE segment_members (
      segment_id  text NOT NULL,
      contact_id  text NOT NULL,
      entered_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (segment_id, contact_id)
    );
    CREATE INDEX segment_members_contact_idx ON segment_members (contact_id);
    CREATE INDEX segment_members_entered_idx ON segment_members (segment_id, entered_at DESC, contact_id DESC);

    -- No foreign keys: the history of a deleted contact still counts in growth.
    CREATE TABLE segment_membership_log (
      id           bigserial PRIMARY KEY,
      workspace_id text NOT NULL,
      segment_id   text NOT NULL,
      contact_id   text NOT NULL,
      change       text NOT NULL CHECK (change IN ('entered', 'exited')),
      event_id     text,
      created_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX segment_membership_log_segment_idx ON segment_membership_log (segment_id, created_at);

    CREATE FUNCTION segments_log_entries() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO segment_membership_log (workspace_id, segment_id, contact_id, change, event_id, created_at)
      SELECT s.workspace_id, n.segment_id, n.contact_id, 'entered', NULLIF(current_setting('segments.event_id', true), ''), now()
        FROM new_rows n JOIN segments s ON s.id = n.segment_id;
      RETURN NULL;
    END $fn$;
    CREATE FUNCTION segments_log_exits() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO segment_membership_log (workspace_id, segment_id, contact_id, change, event_id, created_at)
      SELECT s.workspace_id, o.segment_id, o.contact_id, 'exited', NULLIF(current_setting('segments.event_id', true), ''), now()
        FROM old_rows o JOIN segments s ON s.id = o.segment_id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER segment_members_entered AFTER INSERT ON segment_members
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION segments_log_entries();
    CREATE TRIGGER segment_members_exited AFTER DELETE ON segment_members
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION segments_log_exits();

    CREATE FUNCTION segments_forget_contacts() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      DELETE FROM segment_members sm USING old_rows o WHERE sm.contact_id = o.id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER contacts_leave_segments AFTER DELETE ON contacts
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION segments_forget_contacts();
    CREATE FUNCTION segments_forget_segments() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      DELETE FROM segment_members sm USING old_rows o WHERE sm.segment_id = o.id;
      DELETE FROM segment_membership_log l USING old_rows o WHERE l.segment_id = o.id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER segments_drop_members AFTER DELETE ON segments
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION segments_forget_segments();

    -- Filter helpers: a JSON value as a number or a timestamp, NULL (never an error) when it is not one.
    CREATE FUNCTION segments_num(j jsonb) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
      SELECT CASE
        WHEN jsonb_typeof(j) = 'number' THEN (j #>> '{}')::numeric
        WHEN jsonb_typeof(j) = 'string' AND (j #>> '{}') ~ '^\\s*-?[0-9]{1,30}(\\.[0-9]{1,30})?\\s*$' THEN (j #>> '{}')::numeric
      END
    $fn$;
    CREATE FUNCTION segments_ts(j jsonb) RETURNS timestamptz LANGUAGE plpgsql STABLE PARALLEL SAFE AS $fn$
    BEGIN
      IF jsonb_typeof(j) <> 'string' OR (j #>> '{}') !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}' THEN RETURN NULL; END IF;
      RETURN (j #>> '{}')::timestamptz;
    EXCEPTION WHEN others THEN
      RETURN NULL;
    END $fn$;
  `);
}
