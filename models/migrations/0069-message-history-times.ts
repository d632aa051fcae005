import { Sequelize } from "sequelize";

/**
 * Message history written before every entry's time was formatted in SQL:
 * its `at` values as the API writes moments (ISO 8601 UTC, milliseconds, `Z`),
 * entries kept in their order.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    UPDATE messages m
       SET history = (
         SELECT jsonb_agg(
                  CASE WHEN e.item ->> 'at' IS NOT NULL
                       THEN jsonb_set(e.item, '{at}', to_jsonb(to_char((e.item ->> 'at')::timestamptz AT TIME ZONE 'UTC',
                                                                       'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
                       ELSE e.item END
                  ORDER BY e.n)
           FROM jsonb_array_elements(m.history) WITH ORDINALITY AS e(item, n))
     WHERE jsonb_typeof(m.history) = 'array' AND jsonb_array_length(m.history) > 0
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(m.history) AS x(item)
                    WHERE x.item ->> 'at' !~ '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$');
  `);
}
