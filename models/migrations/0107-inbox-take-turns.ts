import { Sequelize } from "sequelize";

/**
 * A round robin's turns for a batch of new threads in one call
 * (`inbox_take_turns`, issue 31's speed): the batch form of 0086's
 * `inbox_take_turn` for unassigned threads. The threads still unassigned and
 * not closed are locked in id order (so two replicas' batches never wait on
 * each other crosswise, and a single turn, which locks its thread before the
 * rule, never waits on a batch holding the rule), then the rule's row; each
 * thread then takes the next member with room in the order given, counted
 * after the previous thread's claim (each statement of a PL/pgSQL function
 * sees the earlier ones), and the cursor moves past the last member taken.
 * A thread no member has room for waits for the rule. The locks end with
 * the caller's statement. Answers the threads assigned.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE OR REPLACE FUNCTION inbox_take_turns(
      p_workspace text, p_rule text, p_threads text[], p_members text[], p_max_open integer
    ) RETURNS SETOF inbox_threads LANGUAGE plpgsql AS $fn$
    DECLARE
      v_n integer := coalesce(cardinality(p_members), 0);
      v_locked text[];
      v_cursor integer;
      v_thread text;
      v_at integer;
      v_member text;
    BEGIN
      IF v_n = 0 THEN RETURN; END IF;
      SELECT array_agg(l.id) INTO v_locked FROM (
        SELECT t.id FROM inbox_threads t
         WHERE t.workspace_id = p_workspace AND t.id = ANY(p_threads)
           AND t.assignee_id IS NULL AND t.status <> 'closed'
         ORDER BY t.id FOR UPDATE) l;
      IF v_locked IS NULL THEN RETURN; END IF;
      SELECT r.cursor INTO v_cursor FROM inbox_assignment_rules r
        WHERE r.workspace_id = p_workspace AND r.id = p_rule FOR UPDATE;
      IF NOT FOUND THEN RETURN; END IF;
      FOR v_thread IN SELECT g.id FROM unnest(p_threads) WITH ORDINALITY g(id, k)
                       WHERE g.id = ANY(v_locked) GROUP BY g.id ORDER BY min(g.k) LOOP
        v_member := NULL;
        SELECT o.at, p_members[o.at + 1] INTO v_at, v_member
          FROM (SELECT k, ((v_cursor + k) % v_n + v_n) % v_n AS at FROM generate_series(0, v_n - 1) k) o
         WHERE p_max_open IS NULL OR (SELECT count(*) FROM inbox_threads t
                 WHERE t.workspace_id = p_workspace AND t.assignee_id = p_members[o.at + 1]
                   AND t.status <> 'closed') < p_max_open
         ORDER BY o.k LIMIT 1;
        IF v_member IS NULL THEN
          UPDATE inbox_threads SET rule_id = p_rule WHERE workspace_id = p_workspace AND id = v_thread;
        ELSE
          v_cursor := (v_at + 1) % v_n;
          RETURN QUERY UPDATE inbox_threads
             SET assignee_id = v_member, assigned_at = now(), rule_id = p_rule, updated_at = now()
           WHERE workspace_id = p_workspace AND id = v_thread RETURNING *;
        END IF;
      END LOOP;
      UPDATE inbox_assignment_rules SET cursor = v_cursor WHERE workspace_id = p_workspace AND id = p_rule;
    END $fn$;
  `);
}
