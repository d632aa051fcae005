import { Binds, selectRows } from "../../lib/database";

/**
 * Reads of `analytics_contact_firsts` (migration 0084): when each contact
 * first did each event type.
 */

/**
 * A funnel over first times: step 1 counts the contacts whose first `steps[0]`
 * falls in `[start, end)`; each next step, those of the step before whose
 * first `steps[k]` came at or after their previous step and within `windowMs`
 * of their first step. One index range scan, then a key probe per contact and step.
 */
export async function funnelCounts(
  workspaceId: string,
  steps: string[],
  start: Date,
  end: Date,
  windowMs: number,
): Promise<number[]> {
  const binds = new Binds([workspaceId, start, end, windowMs]);
  const joins = steps.slice(1).map(
    (type, i) => `LEFT JOIN analytics_contact_firsts f${i + 1}
       ON f${i + 1}.workspace_id = $1 AND f${i + 1}.contact_id = f0.contact_id AND f${i + 1}.type = ${binds.p(type)}
      AND f${i + 1}.first_at >= f${i}.first_at AND f${i + 1}.first_at <= f0.first_at + $4 * interval '1 millisecond'`,
  );
  const [row] = await selectRows<Record<string, string>>(
    `SELECT ${steps.map((_, i) => `count(f${i}.first_at) AS s${i}`).join(", ")}
       FROM analytics_contact_firsts f0
       ${joins.join("\n")}
      WHERE f0.workspace_id = $1 AND f0.type = ${binds.p(steps[0])} AND f0.first_at >= $2 AND f0.first_at < $3`,
    binds.values,
  );
  return steps.map((_, i) => Number(row[`s${i}`]));
}
