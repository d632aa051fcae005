import { Sequelize } from "sequelize";

/**
 * The send worker's claim in one call (`messages_claim_due`, issue 34): up
 * to `p_limit` due sends no other worker holds (`FOR UPDATE SKIP LOCKED`),
 * queued ones whose `send_at` has come and sending ones whose lease ran out,
 * each with an attempt counted, the lease set and `sending` in its history
 * (once). Planned with bitmap scans off, so the due sends are read in
 * `send_at` order through `messages_due_idx` (a burst leaves the index full
 * of entries of rows already sent, which a bitmap scan visits on every
 * claim while an index scan marks them dead once and skips them after):
 * the setting is the function's, so the claim needs no transaction and no
 * `SET LOCAL` round trip of its own.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE OR REPLACE FUNCTION messages_claim_due(p_limit integer, p_lease_ms double precision)
      RETURNS SETOF messages LANGUAGE plpgsql SET enable_bitmapscan = off AS $fn$
    BEGIN
      RETURN QUERY
      UPDATE messages m SET status = 'sending', attempts = m.attempts + 1,
             lease_until = now() + p_lease_ms * interval '1 millisecond', updated_at = now(),
             history = CASE WHEN m.status = 'sending' THEN m.history
                            ELSE m.history || jsonb_build_array(jsonb_build_object(
                                   'status', 'sending',
                                   'at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                   'reason', NULL)) END
       WHERE m.id IN (SELECT d.id FROM messages d
                       WHERE d.status IN ('queued', 'sending') AND d.send_at <= now()
                         AND (d.status = 'queued' OR d.lease_until < now())
                       ORDER BY d.send_at LIMIT greatest(p_limit, 1) FOR UPDATE SKIP LOCKED)
      RETURNING m.*;
    END $fn$;
  `);
}
