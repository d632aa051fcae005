import { QueryTypes, type Sequelize } from "sequelize";
import { database, likeEscape } from "../../lib/database";

/**
 * One query across the workspace's records. Each kind of record is a source
 * with the permission it needs and a trigram-indexed query; campaigns and
 * templates become two more entries of SOURCES when those areas exist. Every
 * hit has the same shape, so a client renders them alike.
 */
export interface SearchHit {
  type: string;
  id: string;
  title: string;
  subtitle: string | null;
  score: number;
  updatedAt: Date;
}

interface SearchSource {
  type: string;
  permission: string;
  run(
    sequelize: Sequelize,
    workspaceId: string,
    q: string,
    limit: number,
  ): Promise<{ hits: SearchHit[]; total: number }>;
}

interface Row {
  id: string;
  title: string | null;
  subtitle: string | null;
  score: number;
  updatedAt: Date;
  total: string;
}

/** `expression` must be the indexed expression itself, so the trigram index serves the LIKE. */
function source(
  type: string,
  permission: string,
  table: string,
  expression: string,
  title: string,
  subtitle: string,
): SearchSource {
  return {
    type,
    permission,
    async run(sequelize, workspaceId, q, limit) {
      const rows = await sequelize.query<Row>(
        `SELECT id, ${title} AS title, ${subtitle} AS subtitle, similarity(lower(${expression}), $2)::float AS score,
                updated_at AS "updatedAt", count(*) OVER () AS total
           FROM ${table}
          WHERE workspace_id = $1 AND ${expression} ILIKE $3
          ORDER BY score DESC, updated_at DESC, id
          LIMIT $4`,
        {
          bind: [workspaceId, q.toLowerCase(), `%${likeEscape(q)}%`, limit],
          type: QueryTypes.SELECT,
        },
      );
      return {
        total: rows.length ? Number(rows[0].total) : 0,
        hits: rows.map((r) => ({
          type,
          id: r.id,
          title: r.title ?? "",
          subtitle: r.subtitle,
          score: Math.round(r.score * 1000) / 1000,
          updatedAt: r.updatedAt,
        })),
      };
    },
  };
}

export const SOURCES: SearchSource[] = [
  source(
    "contacts",
    "contacts.read",
    "contacts",
    // The contacts area keeps a stored, lower-cased search_text (email, names, phone) with a trigram index.
    "search_text",
    "coalesce(nullif(trim(coalesce(first_name, '') || ' ' || coalesce(last_name, '')), ''), email, phone, external_id)",
    "coalesce(email, phone)",
  ),
  source(
    "companies",
    "contacts.read",
    "companies",
    "(lower(name || ' ' || coalesce(domain, '')))",
    "name",
    "domain",
  ),
  source(
    "deals",
    "contacts.read",
    "deals",
    "(lower(title))",
    "title",
    "(to_char(value, 'FM999999999999990.00') || ' ' || currency || ' · ' || status)",
  ),
];

export async function search(
  workspaceId: string,
  q: string,
  options: { types: string[]; limit: number; may: (permission: string) => boolean },
) {
  const sequelize = await database();
  const sources = SOURCES.filter((s) => options.types.includes(s.type) && options.may(s.permission));
  const results = await Promise.all(sources.map((s) => s.run(sequelize, workspaceId, q, options.limit)));
  const totals: Record<string, number> = {};
  sources.forEach((s, i) => (totals[s.type] = results[i].total));
  const data = results
    .flatMap((r) => r.hits)
    .sort((a, b) => b.score - a.score || b.updatedAt.getTime() - a.updatedAt.getTime());
  return { query: q, data, totals };
}
