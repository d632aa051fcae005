import { Sequelize } from "sequelize";

/**
 * Per-contact analytics facts for cohorts, attribution and segment answers,
 * kept like those of 0084 (statement triggers in the fact's transaction; a
 * contact removed takes its rows along; events claimed from a session or moved
 * by a merge count for their new contact).
 *
 * - `analytics_contact_created`: when each contact was created (the cohort of
 *   a `cohorts` query without `event`).
 * - `analytics_contact_activity`: the 15-minute UTC buckets in which each
 *   contact did anything. Every bucket edge of every zone the answers allow
 *   falls on a quarter hour, so "active in period i" is exact in any zone and
 *   granularity. Insert-only: a NOT EXISTS prefilter skips the buckets already
 *   held, so a hot contact's events take no row lock.
 * - `analytics_contact_touches`: each contact's touches, for attribution: a
 *   campaign message sent to it (kind `campaign`, key the campaign id, at its
 *   `sentAt`) and an event carrying `utm_source` (kind `source`, key the
 *   source, at the event's time).
 * - `analytics_contact_opt_outs`: each staged `unsubscribe.<channel>` fact by
 *   its contact, so an answer for a segment counts its members' opt-outs.
 *
 * Attribution is computed when a conversion is stored: every event with a
 * contact is a conversion of its type, except page views and `message.*`
 * tracking events (the bulk of the volume, which no one counts as one),
 * attributed over the contact's touches in the 30 days up to it (its own UTM
 * source included) and added to the rollups by `analytics_add` as
 * `attr.<model>.<conversions|revenue>.<type>`, channel = touch kind, dim =
 * touch key, at the conversion's time: first_touch and last_touch give the
 * whole conversion and `metadata.amount` to one touch (ties broken by kind,
 * then key), linear 1/n to each. A touch stored after its conversion does not
 * re-attribute it.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE analytics_contact_created (
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL,
      created_at   timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, contact_id)
    );
    CREATE INDEX analytics_contact_created_time_idx ON analytics_contact_created (workspace_id, created_at);

    CREATE TABLE analytics_contact_activity (
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL,
      bucket       timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, contact_id, bucket)
    );

    CREATE TABLE analytics_contact_touches (
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL,
      at           timestamptz NOT NULL,
      kind         text NOT NULL CHECK (kind IN ('campaign', 'source')),
      key          text NOT NULL,
      PRIMARY KEY (workspace_id, contact_id, at, kind, key)
    );

    CREATE TABLE analytics_contact_opt_outs (
      id           bigserial PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL,
      channel      text NOT NULL,
      campaign_id  text NOT NULL,
      at           timestamptz NOT NULL
    );
    CREATE INDEX analytics_contact_opt_outs_contact_idx ON analytics_contact_opt_outs (workspace_id, contact_id, at);

    INSERT INTO analytics_contact_created (workspace_id, contact_id, created_at)
    SELECT workspace_id, id, created_at FROM contacts;
    INSERT INTO analytics_contact_activity (workspace_id, contact_id, bucket)
    SELECT DISTINCT workspace_id, contact_id, analytics_bucket(timestamp) FROM events WHERE contact_id IS NOT NULL;
    INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
    SELECT DISTINCT workspace_id, contact_id, timestamp, 'source', analytics_key(utm_source)
      FROM events WHERE contact_id IS NOT NULL AND utm_source IS NOT NULL;
    INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
    SELECT DISTINCT workspace_id, contact_id, sent_at, 'campaign', analytics_key(campaign_id)
      FROM messages WHERE contact_id IS NOT NULL AND campaign_id IS NOT NULL AND sent_at IS NOT NULL;

    CREATE FUNCTION analytics_contacts_created() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO analytics_contact_created (workspace_id, contact_id, created_at)
      SELECT n.workspace_id, n.id, n.created_at FROM new_rows n
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_contacts_created AFTER INSERT ON contacts
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_contacts_created();

    CREATE FUNCTION analytics_contact_facts_forget() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      DELETE FROM analytics_contact_created f USING old_rows o
       WHERE f.workspace_id = o.workspace_id AND f.contact_id = o.id;
      DELETE FROM analytics_contact_activity f USING old_rows o
       WHERE f.workspace_id = o.workspace_id AND f.contact_id = o.id;
      DELETE FROM analytics_contact_touches f USING old_rows o
       WHERE f.workspace_id = o.workspace_id AND f.contact_id = o.id;
      DELETE FROM analytics_contact_opt_outs f USING old_rows o
       WHERE f.workspace_id = o.workspace_id AND f.contact_id = o.id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_contact_facts_forgotten AFTER DELETE ON contacts
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_contact_facts_forget();

    -- Events' activity and UTM touches: every inserted event with a contact; on UPDATE only those whose contact
    -- changed (a session claimed, a merge). Static statements per operation, so the hot path's plans are cached.
    -- The insert trigger's name sorts before analytics_attribution's (triggers of one event fire in name order),
    -- so a conversion sees its own statement's touches.
    CREATE FUNCTION analytics_activity_inserted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO analytics_contact_activity (workspace_id, contact_id, bucket)
      SELECT DISTINCT s.workspace_id, s.contact_id, analytics_bucket(s.timestamp)
        FROM (SELECT * FROM new_rows WHERE contact_id IS NOT NULL) s
       WHERE NOT EXISTS (SELECT 1 FROM analytics_contact_activity a
                          WHERE a.workspace_id = s.workspace_id AND a.contact_id = s.contact_id
                            AND a.bucket = analytics_bucket(s.timestamp))
       ORDER BY 1, 2, 3
      ON CONFLICT DO NOTHING;
      INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
      SELECT DISTINCT s.workspace_id, s.contact_id, s.timestamp, 'source', analytics_key(s.utm_source)
        FROM (SELECT * FROM new_rows WHERE contact_id IS NOT NULL) s
       WHERE s.utm_source IS NOT NULL
       ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $fn$;
    CREATE FUNCTION analytics_activity_moved() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO analytics_contact_activity (workspace_id, contact_id, bucket)
      SELECT DISTINCT s.workspace_id, s.contact_id, analytics_bucket(s.timestamp)
        FROM (SELECT n.* FROM new_rows n JOIN old_rows o ON o.id = n.id
               WHERE n.contact_id IS NOT NULL AND n.contact_id IS DISTINCT FROM o.contact_id) s
       WHERE NOT EXISTS (SELECT 1 FROM analytics_contact_activity a
                          WHERE a.workspace_id = s.workspace_id AND a.contact_id = s.contact_id
                            AND a.bucket = analytics_bucket(s.timestamp))
       ORDER BY 1, 2, 3
      ON CONFLICT DO NOTHING;
      INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
      SELECT DISTINCT s.workspace_id, s.contact_id, s.timestamp, 'source', analytics_key(s.utm_source)
        FROM (SELECT n.* FROM new_rows n JOIN old_rows o ON o.id = n.id
               WHERE n.contact_id IS NOT NULL AND n.contact_id IS DISTINCT FROM o.contact_id) s
       WHERE s.utm_source IS NOT NULL
       ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_activity_inserted AFTER INSERT ON events
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_activity_inserted();
    CREATE TRIGGER analytics_activity_moved AFTER UPDATE ON events
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_activity_moved();

    CREATE FUNCTION analytics_conversions_attributed() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      ws text[]; metrics text[]; at timestamptz[]; kinds text[]; keys text[]; amounts numeric[];
    BEGIN
      WITH touched AS (
        SELECT n.workspace_id, n.id, n.timestamp AS at, analytics_key(n.type) AS type,
               analytics_amount(n.metadata -> 'amount') AS amount, t.kind, t.key,
               row_number() OVER (PARTITION BY n.id ORDER BY t.at, t.kind, t.key) AS from_first,
               row_number() OVER (PARTITION BY n.id ORDER BY t.at DESC, t.kind DESC, t.key DESC) AS from_last,
               count(*) OVER (PARTITION BY n.id) AS touches
          FROM new_rows n
          JOIN analytics_contact_touches t
            ON t.workspace_id = n.workspace_id AND t.contact_id = n.contact_id
           AND t.at <= n.timestamp AND t.at > n.timestamp - interval '30 days'
         WHERE n.contact_id IS NOT NULL AND n.type <> 'page_view' AND n.type NOT LIKE 'message.%'
      )
      SELECT array_agg(x.workspace_id), array_agg('attr.' || m.model || '.' || v.measure || '.' || x.type), array_agg(x.at),
             array_agg(x.kind), array_agg(x.key),
             array_agg(CASE v.measure WHEN 'conversions' THEN 1::numeric ELSE x.amount END / m.share)
        INTO ws, metrics, at, kinds, keys, amounts
        FROM touched x
       CROSS JOIN LATERAL (VALUES ('first_touch', x.from_first = 1, 1::numeric),
                                  ('last_touch', x.from_last = 1, 1::numeric),
                                  ('linear', true, x.touches::numeric)) AS m(model, counts, share)
       CROSS JOIN (VALUES ('conversions'), ('revenue')) AS v(measure)
       WHERE m.counts;
      -- Most events have no touch in the window: nothing to add.
      IF ws IS NOT NULL THEN
        PERFORM analytics_add(ws, metrics, at, kinds, array_fill(''::text, ARRAY[cardinality(ws)]), keys, amounts);
      END IF;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_attribution AFTER INSERT ON events
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_conversions_attributed();

    -- Campaign messages as touches: when first sent, and again for their new contact when a merge moves them.
    CREATE FUNCTION analytics_messages_touched() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
        SELECT DISTINCT n.workspace_id, n.contact_id, n.sent_at, 'campaign', analytics_key(n.campaign_id)
          FROM new_rows n
         WHERE n.contact_id IS NOT NULL AND n.campaign_id IS NOT NULL AND n.sent_at IS NOT NULL
         ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT DO NOTHING;
      ELSE
        INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
        SELECT DISTINCT n.workspace_id, n.contact_id, n.sent_at, 'campaign', analytics_key(n.campaign_id)
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.contact_id IS NOT NULL AND n.campaign_id IS NOT NULL AND n.sent_at IS NOT NULL
           AND (o.sent_at IS NULL OR n.contact_id IS DISTINCT FROM o.contact_id)
         ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT DO NOTHING;
      END IF;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_messages_touched AFTER INSERT ON messages
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_messages_touched();
    CREATE TRIGGER analytics_messages_touched_again AFTER UPDATE ON messages
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_messages_touched();

    -- Opt-outs by contact, counted as 0083 counts them (when first staged), with the message's campaign.
    CREATE FUNCTION analytics_opt_outs_kept() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO analytics_contact_opt_outs (workspace_id, contact_id, channel, campaign_id, at)
      SELECT n.workspace_id, n.data ->> 'contactId', analytics_key(substr(n.type, length('unsubscribe.') + 1)),
             analytics_key((SELECT m.campaign_id FROM messages m
                             WHERE m.id = n.data ->> 'messageId' AND m.workspace_id = n.workspace_id)),
             n.occurred_at
        FROM new_rows n
       WHERE n.type LIKE 'unsubscribe.%' AND n.attempts = 0 AND n.data ->> 'contactId' IS NOT NULL
         AND EXISTS (SELECT 1 FROM workspaces w WHERE w.id = n.workspace_id);
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_opt_outs_kept AFTER INSERT ON domain_event_outbox
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_opt_outs_kept();
  `);
}
