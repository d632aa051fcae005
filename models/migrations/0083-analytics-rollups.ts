import { Sequelize } from "sequelize";

/**
 * Analytics rollups: additive counters per workspace, metric and UTC bucket,
 * split by channel, campaign and one dimension (event type, suppression
 * reason, domain, UTM source, form, node, url). `''` stands for "none" so the
 * key stays a primary key. Each fact is added at three tiers: 15-minute
 * buckets (tier 0: every zone whose offset is a multiple of 15 minutes,
 * half-hour and 45-minute zones included, has its hours and days on their
 * edges), hours (1) and days (2); a range is read as the fewest buckets that
 * tile it exactly (services/analytics/tiles.ts). Each fact is also added to an
 * `all:<metric>` series with no split, which an answer without a filter reads.
 *
 * The rollups are derived by statement-level triggers in the same transaction
 * as the fact (a stored event, a message reaching a status, a contact created or
 * removed, a form submission, a staged opt-out fact): a fact and its counts
 * commit or roll back together, so nothing is counted twice on a retry and
 * nothing is missed on a crash, whichever code path wrote the row. Each fact is
 * bucketed by its own time (an event's `timestamp`, a message's `sentAt`, ...),
 * so a late or backfilled fact lands in its closed bucket. Deleting raw rows
 * (retention) fires nothing here: the counts of the deleted period stay.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE analytics_rollups (
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      metric       text NOT NULL,
      tier         smallint NOT NULL,
      bucket       timestamptz NOT NULL,
      channel      text NOT NULL DEFAULT '',
      campaign_id  text NOT NULL DEFAULT '',
      dim          text NOT NULL DEFAULT '',
      value        numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (workspace_id, metric, tier, bucket, channel, campaign_id, dim)
    );

    -- The 15-minute UTC bucket a moment falls in.
    CREATE FUNCTION analytics_bucket(t timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
      SELECT to_timestamp(floor(extract(epoch FROM t) / 900) * 900)
    $fn$;

    -- A JSON value as a number (a numeric string too), else 0: a purchase without a usable amount adds nothing.
    CREATE FUNCTION analytics_amount(j jsonb) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
      SELECT CASE
        WHEN jsonb_typeof(j) = 'number' AND abs((j #>> '{}')::numeric) < 1e15 THEN (j #>> '{}')::numeric
        WHEN jsonb_typeof(j) = 'string' AND (j #>> '{}') ~ '^\\s*-?[0-9]{1,15}(\\.[0-9]{1,6})?\\s*$' THEN (j #>> '{}')::numeric
        ELSE 0
      END
    $fn$;

    -- A key part from user data, bounded so the primary key's index entry always fits.
    CREATE FUNCTION analytics_key(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
      SELECT coalesce(left(t, 200), '')
    $fn$;

    -- When a message first reached a status: the time of its first history entry of that status.
    CREATE FUNCTION analytics_reached_at(history jsonb, status text) RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $fn$
      SELECT coalesce(
        (SELECT min((h ->> 'at')::timestamptz) FROM jsonb_array_elements(history) h WHERE h ->> 'status' = status),
        now())
    $fn$;

    -- Add facts (workspace, metric, time, channel, campaign, dim, value) to every tier and to their all: series,
    -- one upsert in key order (so concurrent writers take row locks in the same order).
    CREATE FUNCTION analytics_add(text[], text[], timestamptz[], text[], text[], text[], numeric[]) RETURNS void
    LANGUAGE sql AS $fn$
      INSERT INTO analytics_rollups AS r (workspace_id, metric, tier, bucket, channel, campaign_id, dim, value)
      SELECT f.ws, x.metric, t.tier,
             CASE t.tier WHEN 0 THEN analytics_bucket(f.at)
                         WHEN 1 THEN date_trunc('hour', f.at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                         ELSE date_trunc('day', f.at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' END,
             x.channel, x.campaign, x.dim, sum(f.value)
        FROM unnest($1, $2, $3, $4, $5, $6, $7) AS f(ws, metric, at, channel, campaign, dim, value)
        CROSS JOIN LATERAL (VALUES (f.metric, f.channel, f.campaign, f.dim), ('all:' || f.metric, '', '', ''))
                           AS x(metric, channel, campaign, dim)
        CROSS JOIN (VALUES (0::smallint), (1::smallint), (2::smallint)) AS t(tier)
       GROUP BY 1, 2, 3, 4, 5, 6, 7
       ORDER BY 1, 2, 3, 4, 5, 6, 7
      ON CONFLICT (workspace_id, metric, tier, bucket, channel, campaign_id, dim)
      DO UPDATE SET value = r.value + EXCLUDED.value
    $fn$;

    -- Events: one per event by type; purchases add their revenue and an order (by campaign and UTM source);
    -- a message click with its url counts for the link (by campaign; urls are kept to 500 characters).
    CREATE FUNCTION analytics_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      -- The hot path: analytics_add's expansion written out, so no arrays are built per statement.
      INSERT INTO analytics_rollups AS r (workspace_id, metric, tier, bucket, channel, campaign_id, dim, value)
      SELECT f.workspace_id, x.metric, t.tier,
             CASE t.tier WHEN 0 THEN analytics_bucket(f.at)
                         WHEN 1 THEN date_trunc('hour', f.at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                         ELSE date_trunc('day', f.at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' END,
             x.channel, x.campaign, x.dim, sum(f.value)
        FROM (SELECT n.workspace_id, m.metric, n.timestamp AS at,
                     CASE WHEN m.metric IN ('events', 'link.clicks') THEN analytics_key(n.metadata ->> 'channel') ELSE '' END AS channel,
                     analytics_key(n.metadata ->> 'campaignId') AS campaign_id,
                     CASE m.metric WHEN 'events' THEN analytics_key(n.type)
                                   WHEN 'link.clicks' THEN coalesce(left(n.metadata ->> 'url', 500), '')
                                   ELSE analytics_key(n.utm_source) END AS dim,
                     CASE WHEN m.metric = 'revenue' THEN analytics_amount(n.metadata -> 'amount') ELSE 1 END AS value
                FROM new_rows n
                JOIN LATERAL (VALUES ('events'), ('revenue'), ('orders'), ('link.clicks')) AS m(metric)
                  ON m.metric = 'events'
                  OR (m.metric IN ('revenue', 'orders') AND n.type = 'purchase')
                  OR (m.metric = 'link.clicks' AND n.type = 'message.click' AND n.metadata ->> 'url' IS NOT NULL)) f
        CROSS JOIN LATERAL (VALUES (f.metric, f.channel, f.campaign_id, f.dim), ('all:' || f.metric, '', '', ''))
                           AS x(metric, channel, campaign, dim)
        CROSS JOIN (VALUES (0::smallint), (1::smallint), (2::smallint)) AS t(tier)
       GROUP BY 1, 2, 3, 4, 5, 6, 7
       ORDER BY 1, 2, 3, 4, 5, 6, 7
      ON CONFLICT (workspace_id, metric, tier, bucket, channel, campaign_id, dim)
      DO UPDATE SET value = r.value + EXCLUDED.value;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_events AFTER INSERT ON events
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_events_inserted();

    -- Messages: each status a message reaches, once, at the time it reached it (a new row counts from nothing).
    -- sent, delivered, opened and clicked by their own times (a click also sets openedAt); failed, bounced,
    -- complained and suppressed when the status moves there; email ones again by the recipient's domain.
    CREATE FUNCTION analytics_messages_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      -- One statement for inserts and updates: an inserted row is paired with no previous row. (EXECUTE,
      -- since an INSERT trigger has no old_rows to name.)
      EXECUTE format($q$
      WITH pairs AS (%s),
      reached AS (
        SELECT p.workspace_id, p.channel, p.campaign_id, p.to_address, s.status, s.at, s.reason
          FROM pairs p
          CROSS JOIN LATERAL (VALUES
            ('sent', CASE WHEN p.old_sent_at IS NULL THEN p.sent_at END, NULL),
            ('delivered', CASE WHEN p.old_delivered_at IS NULL THEN p.delivered_at END, NULL),
            ('opened', CASE WHEN p.old_opened_at IS NULL THEN p.opened_at END, NULL),
            ('clicked', CASE WHEN p.old_clicked_at IS NULL THEN p.clicked_at END, NULL),
            (p.status, CASE WHEN p.status IN ('failed', 'bounced', 'complained', 'suppressed')
                             AND p.old_status IS DISTINCT FROM p.status
                            THEN analytics_reached_at(p.history, p.status) END,
             CASE WHEN p.status IN ('suppressed', 'bounced') THEN p.reason END)
          ) AS s(status, at, reason)
         WHERE s.at IS NOT NULL
      )
      SELECT analytics_add(array_agg(f.workspace_id), array_agg(f.metric), array_agg(f.at), array_agg(f.channel),
                           array_agg(f.campaign_id), array_agg(f.dim), array_agg(f.value))
        FROM (SELECT x.workspace_id, 'msg.' || x.status AS metric, x.at, x.channel,
                     analytics_key(x.campaign_id) AS campaign_id, analytics_key(x.reason) AS dim, 1::numeric AS value
                FROM reached x
              UNION ALL
              SELECT x.workspace_id, 'domain.' || x.status, x.at, x.channel,
                     analytics_key(x.campaign_id), analytics_key(lower(split_part(x.to_address, '@', 2))), 1
                FROM reached x
               WHERE x.channel = 'email') f
      $q$, CASE WHEN TG_OP = 'INSERT'
        THEN 'SELECT n.*, NULL::text AS old_status, NULL::timestamptz AS old_sent_at, NULL::timestamptz AS old_delivered_at,
                     NULL::timestamptz AS old_opened_at, NULL::timestamptz AS old_clicked_at FROM new_rows n'
        ELSE 'SELECT n.*, o.status AS old_status, o.sent_at AS old_sent_at, o.delivered_at AS old_delivered_at,
                     o.opened_at AS old_opened_at, o.clicked_at AS old_clicked_at
                FROM new_rows n JOIN old_rows o ON o.id = n.id' END);
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_messages_inserted AFTER INSERT ON messages
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_messages_changed();
    CREATE TRIGGER analytics_messages_updated AFTER UPDATE ON messages
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_messages_changed();

    -- Contacts: created by their own creation time; removed (merged away, erased) when removed, so the
    -- total at any moment is created minus removed up to it.
    CREATE FUNCTION analytics_contacts_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        PERFORM analytics_add(array_agg(f.workspace_id), array_agg(f.metric), array_agg(f.at), array_agg(f.channel),
                              array_agg(f.campaign_id), array_agg(f.dim), array_agg(f.value))
          FROM (SELECT n.workspace_id, 'contacts' AS metric, n.created_at AS at, '' AS channel, '' AS campaign_id,
                       '' AS dim, 1::numeric AS value
                  FROM new_rows n) f;
      ELSE
        -- A workspace being deleted takes its rollups with it (the cascade): nothing to count there.
        PERFORM analytics_add(array_agg(f.workspace_id), array_agg(f.metric), array_agg(f.at), array_agg(f.channel),
                              array_agg(f.campaign_id), array_agg(f.dim), array_agg(f.value))
          FROM (SELECT o.workspace_id, 'contacts.removed' AS metric, now() AS at, '' AS channel, '' AS campaign_id,
                       '' AS dim, 1::numeric AS value
                  FROM old_rows o WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = o.workspace_id)) f;
      END IF;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_contacts_inserted AFTER INSERT ON contacts
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_contacts_changed();
    CREATE TRIGGER analytics_contacts_deleted AFTER DELETE ON contacts
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_contacts_changed();

    -- Form submissions, by form.
    CREATE FUNCTION analytics_submissions_inserted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM analytics_add(array_agg(f.workspace_id), array_agg(f.metric), array_agg(f.at), array_agg(f.channel),
                            array_agg(f.campaign_id), array_agg(f.dim), array_agg(f.value))
        FROM (SELECT n.workspace_id, 'submissions' AS metric, n.created_at AS at, '' AS channel, '' AS campaign_id,
                     n.form_id AS dim, 1::numeric AS value
                FROM new_rows n) f;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_submissions AFTER INSERT ON form_submissions
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_submissions_inserted();

    -- Opt-outs exist as facts only (\`unsubscribe.<channel>\`, staged in the opt-out's transaction): counted
    -- when first staged (a fact put back after a failed send has attempts > 0), by the message it names.
    CREATE FUNCTION analytics_opt_outs_staged() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM analytics_add(array_agg(f.workspace_id), array_agg(f.metric), array_agg(f.at), array_agg(f.channel),
                            array_agg(f.campaign_id), array_agg(f.dim), array_agg(f.value))
        FROM (SELECT n.workspace_id, 'msg.unsubscribed' AS metric, n.occurred_at AS at,
                     analytics_key(substr(n.type, length('unsubscribe.') + 1)) AS channel,
                     analytics_key((SELECT m.campaign_id FROM messages m
                                     WHERE m.id = n.data ->> 'messageId' AND m.workspace_id = n.workspace_id)) AS campaign_id,
                     '' AS dim, 1::numeric AS value
                FROM new_rows n
               WHERE n.type LIKE 'unsubscribe.%' AND n.attempts = 0) f;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_opt_outs AFTER INSERT ON domain_event_outbox
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_opt_outs_staged();
  `);
}
