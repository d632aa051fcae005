import { Binds } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { LogView } from "./campaigns.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Queries of the step logs (`campaign_logs`). Workspace id first. */

interface LogRow {
  id: string;
  enrollment_id: string;
  contact_id: string;
  node_id: string;
  outcome: LogView["outcome"];
  branch: string | null;
  detail: string | null;
  created_at: Date;
}

export async function listLogs(
  workspaceId: WorkspaceId,
  campaignId: string,
  filter: { enrollmentId?: string; contactId?: string; nodeId?: string },
  page: PageRequest,
): Promise<Page<LogView>> {
  const binds = Binds.inWorkspace([campaignId]);
  const where = ["workspace_id = $1", "campaign_id = $2"];
  if (filter.enrollmentId) where.push(`enrollment_id = ${binds.p(filter.enrollmentId)}`);
  if (filter.contactId) where.push(`contact_id = ${binds.p(filter.contactId)}`);
  if (filter.nodeId) where.push(`node_id = ${binds.p(filter.nodeId)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM campaign_logs WHERE ${clause}`, orderBy: "id DESC" },
    binds.values,
    page,
    (r: LogRow): LogView => ({
      id: String(r.id),
      enrollmentId: r.enrollment_id,
      contactId: r.contact_id,
      nodeId: r.node_id,
      outcome: r.outcome,
      branch: r.branch,
      detail: r.detail,
      createdAt: r.created_at,
    }),
  );
}
