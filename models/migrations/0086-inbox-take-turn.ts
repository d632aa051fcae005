import { Sequelize } from "sequelize";

/**
 * A round robin's turn taken and its thread claimed in one call
 * (`inbox_take_turn`, issue 31's speed): the thread is locked while it is
 * still to be taken, then the rule's row; the members' open threads are
 * counted after both locks (each statement of a PL/pgSQL function reads a
 * fresh snapshot, so claims committed by the previous holder of the rule's
 * lock are seen and `maxOpen` holds across replicas); the cursor moves past
 * the member taken. The locks end with the caller's statement, never held
 * over a round trip. `p_holder` null: an unassigned thread (one with no
 * member with room waits for the rule); else a thread its holder still holds
 * open, handed to the next member in turn but them.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE OR REPLACE FUNCTION inbox_take_turn(
      p_workspace text, p_rule text, p_thread text, p_members text[], p_max_open integer, p_holder text
    ) RETURNS SETOF inbox_threads LANGUAGE plpgsql AS $fn$
    DECLARE
      v_n integer := coalesce(cardinality(p_members), 0);
      v_cursor integer;
      v_at integer;
      v_member text;
    BEGIN
      PERFORM 1 FROM inbox_threads t
        WHERE t.workspace_id = p_workspace AND t.id = p_thread
          AND CASE WHEN p_holder IS NULL THEN t.assignee_id IS NULL AND t.status <> 'closed'
                   ELSE t.assignee_id = p_holder AND t.status = 'open' END
        FOR UPDATE;
      IF NOT FOUND OR v_n = 0 THEN RETURN; END IF;
      SELECT r.cursor INTO v_cursor FROM inbox_assignment_rules r
        WHERE r.workspace_id = p_workspace AND r.id = p_rule FOR UPDATE;
      IF NOT FOUND THEN RETURN; END IF;
      SELECT o.at, p_members[o.at + 1] INTO v_at, v_member
        FROM (SELECT k, ((v_cursor + k) % v_n + v_n) % v_n AS at FROM generate_series(0, v_n - 1) k) o
       WHERE p_members[o.at + 1] IS DISTINCT FROM p_holder
         AND (p_max_open IS NULL OR (SELECT count(*) FROM inbox_threads t
               WHERE t.workspace_id = p_workspace AND t.assignee_id = p_members[o.at + 1]
                 AND t.status <> 'closed') < p_max_open)
       ORDER BY o.k LIMIT 1;
      IF v_member IS NULL THEN
        IF p_holder IS NULL THEN
          UPDATE inbox_threads SET rule_id = p_rule WHERE workspace_id = p_workspace AND id = p_thread;
        END IF;
        RETURN;
      END IF;
      UPDATE inbox_assignment_rules SET cursor = (v_at + 1) % v_n WHERE workspace_id = p_workspace AND id = p_rule;
      RETURN QUERY UPDATE inbox_threads
         SET assignee_id = v_member, assigned_at = now(), rule_id = p_rule, updated_at = now()
       WHERE workspace_id = p_workspace AND id = p_thread RETURNING *;
    END $fn$;
  `);
}
