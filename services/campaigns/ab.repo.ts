import { query, queryAcrossWorkspaces } from "../../lib/database";
import type { Workflow } from "./workflow";
import type { WorkspaceId } from "../../lib/tenancy";

/** The queries of campaign A/B splits: each variant's figures and the winners. */

export interface VariantCounts {
  variant: string;
  enrolled: number;
  sent: number;
  opened: number;
  clicked: number;
  goals: number;
}

/**
 * Per variant of a split: the enrollments it took, the messages they were
 * sent after it (sent, opened, clicked), and the enrollments that reached
 * a goal.
 */
export async function variantCounts(campaignId: string, nodeId: string): Promise<VariantCounts[]> {
  const rows = await queryAcrossWorkspaces<Record<keyof VariantCounts, string>>(
    `WITH assigned AS (
       SELECT DISTINCT ON (l.enrollment_id) l.enrollment_id, l.branch, l.created_at
         FROM campaign_logs l
        WHERE l.campaign_id = $1 AND l.node_id = $2 AND l.outcome = 'branched'
        ORDER BY l.enrollment_id, l.id)
     SELECT a.branch AS variant,
            count(*) AS enrolled,
            sum(m.sent) AS sent, sum(m.opened) AS opened, sum(m.clicked) AS clicked,
            count(*) FILTER (WHERE e.exit_reason = 'goal') AS goals
       FROM assigned a
       JOIN campaign_enrollments e ON e.id = a.enrollment_id
       CROSS JOIN LATERAL (
         SELECT count(*) FILTER (WHERE m.sent_at IS NOT NULL) AS sent,
                count(*) FILTER (WHERE m.opened_at IS NOT NULL) AS opened,
                count(*) FILTER (WHERE m.clicked_at IS NOT NULL) AS clicked
           FROM messages m WHERE m.enrollment_id = a.enrollment_id AND m.created_at >= a.created_at) m
      GROUP BY a.branch`,
    [campaignId, nodeId],
  );
  return rows.map((r) => ({
    variant: r.variant,
    enrolled: Number(r.enrolled),
    sent: Number(r.sent),
    opened: Number(r.opened),
    clicked: Number(r.clicked),
    goals: Number(r.goals),
  }));
}

export interface WinnerRow {
  node_id: string;
  winner: string;
  decided_by: "hand" | "test";
  decided_at: Date;
}

export async function winners(campaignId: string): Promise<WinnerRow[]> {
  return queryAcrossWorkspaces<WinnerRow>(
    `SELECT node_id, winner, decided_by, decided_at FROM campaign_ab_winners WHERE campaign_id = $1`,
    [campaignId],
  );
}

export async function winnerOf(campaignId: string, nodeId: string): Promise<string | null> {
  const [row] = await queryAcrossWorkspaces<{ winner: string }>(
    `SELECT winner FROM campaign_ab_winners WHERE campaign_id = $1 AND node_id = $2`,
    [campaignId, nodeId],
  );
  return row?.winner ?? null;
}

/** Choose a winner: by hand it replaces any; the test only names one where none is chosen. */
export async function setWinner(
  workspaceId: WorkspaceId,
  campaignId: string,
  nodeId: string,
  winner: string,
  by: "hand" | "test",
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO campaign_ab_winners (campaign_id, node_id, workspace_id, winner, decided_by) VALUES ($2, $3, $1, $4, $5)
     ON CONFLICT (campaign_id, node_id) DO ${by === "hand" ? "UPDATE SET winner = EXCLUDED.winner, decided_by = 'hand', decided_at = now()" : "NOTHING"}
     RETURNING node_id`,
    [campaignId, nodeId, winner, by],
  );
}

/** Active campaigns whose published version has a split, with that workflow (of one workspace, when given). */
export async function campaignsWithSplits(
  workspaceId?: WorkspaceId,
): Promise<Array<{ id: string; workspace_id: WorkspaceId; name: string; workflow: Workflow }>> {
  const statement = (scope: string) =>
    `SELECT c.id, c.workspace_id, c.name, v.workflow
       FROM campaigns c JOIN campaign_versions v ON v.campaign_id = c.id AND v.number = c.published_version
      WHERE v.workflow -> 'nodes' @> '[{"type": "ab_split"}]' AND ${scope}
      ORDER BY c.created_at DESC, c.id DESC`;
  return workspaceId
    ? query(workspaceId, statement("c.workspace_id = $1"))
    : queryAcrossWorkspaces(statement("c.status = 'active'"));
}
