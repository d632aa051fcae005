import { likeEscape, query } from "../../lib/database";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * One query across the workspace's records. Each kind of record is a source
 * with the permission it needs and a trigram-indexed query; every hit has the
 * same shape, so a client renders them alike. Within a kind, records whose
 * name (or, for contacts, email, first or last name, phone) starts with the
 * query come before those that only contain it.
 */
export interface SearchHit {
  type: string;
  id: string;
  title: string;
  subtitle: string | null;
}

/** Hits per kind of record, at most. */
export const SEARCH_LIMIT = 10;

interface SearchSource {
  type: string;
  permission: string;
  run(workspaceId: WorkspaceId, q: string): Promise<SearchHit[]>;
}

interface Row {
  id: string;
  title: string | null;
  subtitle: string | null;
}

/**
 * `expression` must be the indexed expression itself (lower-cased), so the
 * trigram index serves the LIKE; `prefixes` are the lower-cased texts a
 * prefix match is looked for in.
 */
function source(
  type: string,
  permission: string,
  table: string,
  expression: string,
  prefixes: string[],
  title: string,
  subtitle: string,
): SearchSource {
  return {
    type,
    permission,
    async run(workspaceId, q) {
      const lowered = q.toLowerCase();
      const rows = await query<Row>(
        workspaceId,
        `SELECT id, ${title} AS title, ${subtitle} AS subtitle
           FROM ${table}
          WHERE workspace_id = $1 AND ${expression} LIKE $2
          ORDER BY coalesce(${prefixes.map((p) => `${p} LIKE $3`).join(" OR ")}, false) DESC,
                   similarity(${expression}, $4) DESC, updated_at DESC, id
          LIMIT $5`,
        [`%${likeEscape(lowered)}%`, `${likeEscape(lowered)}%`, lowered, SEARCH_LIMIT],
      );
      return rows.map((r) => ({ type, id: r.id, title: r.title ?? "", subtitle: r.subtitle }));
    },
  };
}

export const SOURCES: SearchSource[] = [
  source(
    "contact",
    "contacts.read",
    "contacts",
    // The contacts area keeps a stored, lower-cased search_text (email, names, phone) with a trigram index.
    "search_text",
    [
      "lower(email)",
      "lower(first_name)",
      "lower(last_name)",
      "lower(trim(coalesce(first_name, '') || ' ' || coalesce(last_name, '')))",
      "lower(phone)",
    ],
    "coalesce(nullif(trim(coalesce(first_name, '') || ' ' || coalesce(last_name, '')), ''), email, phone, external_id)",
    "coalesce(email, phone)",
  ),
  source(
    "company",
    "contacts.read",
    "companies",
    "(lower(name || ' ' || coalesce(domain, '')))",
    ["lower(name)", "lower(domain)"],
    "name",
    "domain",
  ),
  source(
    "deal",
    "contacts.read",
    "deals",
    "(lower(title))",
    ["lower(title)"],
    "title",
    "(to_char(value, 'FM999999999999990.00') || ' ' || currency || ' · ' || status)",
  ),
  source(
    "campaign",
    "campaigns.read",
    "campaigns",
    "(lower(name))",
    ["lower(name)"],
    "name",
    "(type || ' · ' || status)",
  ),
  source("template", "templates.read", "templates", "(lower(name))", ["lower(name)"], "name", "channel"),
  source("segment", "segments.read", "segments", "(lower(name))", ["lower(name)"], "name", "type"),
  source(
    "form",
    "forms.read",
    "forms",
    "(lower(name))",
    ["lower(name)"],
    "name",
    "CASE WHEN active THEN 'active' ELSE 'inactive' END",
  ),
];

/** The hits of every asked kind the caller may read, kind by kind in SOURCES order. */
export async function search(
  workspaceId: WorkspaceId,
  q: string,
  options: { types: string[]; may: (permission: string) => boolean },
): Promise<{ results: SearchHit[] }> {
  const sources = SOURCES.filter((s) => options.types.includes(s.type) && options.may(s.permission));
  const hits = await Promise.all(sources.map((s) => s.run(workspaceId, q)));
  return { results: hits.flat() };
}
