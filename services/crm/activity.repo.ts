import { QueryTypes } from "sequelize";
import { Binds, database, likeEscape } from "../../lib/database";
import { pageOf, type PageRequest } from "../../lib/pagination";

/**
 * The workspace's recent activity: the audit log, which every area (and every
 * CRM write here) appends to, without the entries about access and settings
 * (keys, members, webhooks, providers, the workspace itself), which stay in
 * the ADMIN-only audit log. Read-only, one query, so filters and pages agree.
 */
export const PRIVATE_TARGETS = [
  "api_key",
  "member",
  "workspace",
  "webhook",
  "webhook_delivery",
  "provider",
  "settings",
  "user",
];

export interface ActivityFilters {
  type?: string;
  targetType?: string;
  targetId?: string;
  actorId?: string;
  from?: Date;
  to?: Date;
}

interface Row {
  id: string;
  action: string;
  actorType: string;
  actorId: string | null;
  actorName: string | null;
  targetType: string | null;
  targetId: string | null;
  metadata: Record<string, unknown>;
  createdAt: Date;
  total: string;
}

export async function listActivity(workspaceId: string, f: ActivityFilters, page: PageRequest) {
  const sequelize = await database();
  const binds = new Binds([workspaceId, PRIVATE_TARGETS]);
  const where = ["a.workspace_id = $1", "coalesce(a.target_type, '') <> ALL($2::text[])"];
  if (f.type)
    where.push(
      f.type.endsWith("*")
        ? `a.action LIKE ${binds.p(`${likeEscape(f.type.slice(0, -1))}%`)}`
        : `a.action = ${binds.p(f.type)}`,
    );
  if (f.targetType) where.push(`a.target_type = ${binds.p(f.targetType)}`);
  if (f.targetId) where.push(`a.target_id = ${binds.p(f.targetId)}`);
  if (f.actorId) where.push(`a.actor_id = ${binds.p(f.actorId)}`);
  if (f.from) where.push(`a.created_at >= ${binds.p(f.from)}`);
  if (f.to) where.push(`a.created_at <= ${binds.p(f.to)}`);
  const filterValues = [...binds.values];
  const rows = await sequelize.query<Row>(
    `SELECT a.id, a.action, a.actor_type AS "actorType", a.actor_id AS "actorId", u.name AS "actorName",
            a.target_type AS "targetType", a.target_id AS "targetId", a.metadata, a.created_at AS "createdAt",
            count(*) OVER () AS total
       FROM audit_logs a
       LEFT JOIN users u ON a.actor_type = 'user' AND u.id = a.actor_id
      WHERE ${where.join(" AND ")}
      ORDER BY a.created_at DESC, a.id DESC
      LIMIT ${binds.p(page.limit)} OFFSET ${binds.p(page.offset)}`,
    { bind: binds.values, type: QueryTypes.SELECT },
  );
  let total = rows.length ? Number(rows[0].total) : 0;
  if (!rows.length && page.offset > 0) {
    const [{ n }] = await sequelize.query<{ n: string }>(
      `SELECT count(*) AS n FROM audit_logs a WHERE ${where.join(" AND ")}`,
      { bind: filterValues, type: QueryTypes.SELECT },
    );
    total = Number(n);
  }
  const data = rows.map((r) => ({
    id: r.id,
    type: r.action,
    actor: { type: r.actorType, id: r.actorId, name: r.actorName },
    target: r.targetType ? { type: r.targetType, id: r.targetId } : null,
    metadata: r.metadata,
    createdAt: r.createdAt,
  }));
  return pageOf(data, total, page);
}
