import { query } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { found } from "../../lib/errors";
import { getRow } from "./contacts.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Duplicate candidates: the same email once `+tags` and dots of the local
 * part are ignored (the stored email itself is unique), the same phone, or a
 * similar full name (pg_trgm similarity ≥ 0.6; candidates found through the
 * trigram index on `search_text` with word similarity).
 */

export const NAME_SIMILARITY = 0.6;

export interface ContactSummary {
  id: string;
  email: string | null;
  phone: string | null;
  firstName: string | null;
  lastName: string | null;
  createdAt: string;
}

export interface Candidate {
  contact: ContactSummary;
  reasons: Array<"email" | "phone" | "name">;
  score: number;
}

/** SQL for the email key: lower-case, local part without `+tag` and dots. */
const EMAIL_KEY = (col: string) =>
  `(replace(split_part(split_part(${col}, '@', 1), '+', 1), '.', '') || '@' || split_part(${col}, '@', 2))`;
const NAME_EXPR = `lower(coalesce(first_name, '') || ' ' || coalesce(last_name, ''))`;

interface SummaryRow {
  id: string;
  email: string | null;
  phone: string | null;
  first_name: string | null;
  last_name: string | null;
  created_at: Date;
}

const summary = (r: SummaryRow): ContactSummary => ({
  id: r.id,
  email: r.email,
  phone: r.phone,
  firstName: r.first_name,
  lastName: r.last_name,
  createdAt: new Date(r.created_at).toISOString(),
});

/** Pure: the email key used to compare addresses. */
export function emailKey(email: string): string {
  const [local, domain] = email.toLowerCase().split("@");
  return `${local.split("+")[0].replace(/\./g, "")}@${domain ?? ""}`;
}

export async function duplicatesOf(workspaceId: WorkspaceId, contactId: string): Promise<Candidate[]> {
  const me = found(await getRow(workspaceId, contactId), "Contact");
  const name = `${me.first_name ?? ""} ${me.last_name ?? ""}`.trim().toLowerCase();
  const rows = await query<SummaryRow & { by_email: boolean; by_phone: boolean; name_sim: number }>(
    workspaceId,
    `SELECT id, email, phone, first_name, last_name, created_at,
            ($3::text IS NOT NULL AND email IS NOT NULL AND ${EMAIL_KEY("email")} = ${EMAIL_KEY("$3::text")}) AS by_email,
            ($4::text IS NOT NULL AND phone = $4::text) AS by_phone,
            CASE WHEN $5::text <> '' THEN similarity(${NAME_EXPR}, $5::text) ELSE 0 END AS name_sim
       FROM contacts
      WHERE workspace_id = $1 AND id <> $2
        AND ( ($3::text IS NOT NULL AND email LIKE '%@' || split_part($3::text, '@', 2) AND ${EMAIL_KEY("email")} = ${EMAIL_KEY("$3::text")})
           OR ($4::text IS NOT NULL AND phone = $4::text)
           OR ($5::text <> '' AND $5::text <% search_text AND similarity(${NAME_EXPR}, $5::text) >= ${NAME_SIMILARITY}))
      LIMIT 200`,
    [contactId, me.email, me.phone, name],
  );
  return rows
    .map((r) => {
      const reasons: Candidate["reasons"] = [];
      if (r.by_email) reasons.push("email");
      if (r.by_phone) reasons.push("phone");
      if (r.name_sim >= NAME_SIMILARITY) reasons.push("name");
      const score = Math.max(r.by_email ? 1 : 0, r.by_phone ? 0.9 : 0, Number(r.name_sim) * 0.8);
      return { contact: summary(r), reasons, score: Math.round(score * 100) / 100 };
    })
    .sort((a, b) => b.score - a.score || a.contact.id.localeCompare(b.contact.id));
}

export interface DuplicateGroup {
  reason: "email" | "phone" | "name";
  value: string;
  contacts: ContactSummary[];
}

/** Workspace-wide groups sharing an email key, a phone or an exact full name; largest groups first. */
export async function duplicateGroups(
  workspaceId: WorkspaceId,
  page: PageRequest,
): Promise<Page<DuplicateGroup>> {
  const groups = `
    SELECT 'email' AS reason, ${EMAIL_KEY("email")} AS value, array_agg(id ORDER BY created_at, id) AS ids
      FROM contacts WHERE workspace_id = $1 AND email IS NOT NULL GROUP BY 2 HAVING count(*) > 1
    UNION ALL
    SELECT 'phone', phone, array_agg(id ORDER BY created_at, id)
      FROM contacts WHERE workspace_id = $1 AND phone IS NOT NULL GROUP BY 2 HAVING count(*) > 1
    UNION ALL
    SELECT 'name', ${NAME_EXPR}, array_agg(id ORDER BY created_at, id)
      FROM contacts WHERE workspace_id = $1 AND trim(${NAME_EXPR}) <> '' GROUP BY 2 HAVING count(*) > 1`;
  const found = await selectPage(
    workspaceId,
    { select: `SELECT g.* FROM (${groups}) g`, orderBy: "cardinality(g.ids) DESC, g.reason, g.value" },
    [],
    page,
    (r: { reason: DuplicateGroup["reason"]; value: string; ids: string[] }) => r,
  );
  const rows = found.data;
  const ids = [...new Set(rows.flatMap((r) => r.ids))];
  const people = ids.length
    ? await query<SummaryRow>(
        workspaceId,
        `SELECT id, email, phone, first_name, last_name, created_at FROM contacts WHERE workspace_id = $1 AND id = ANY($2::text[])`,
        [ids],
      )
    : [];
  const byId = new Map(people.map((p) => [p.id, summary(p)]));
  return {
    ...found,
    data: rows.map((r) => ({
      reason: r.reason,
      value: r.value,
      contacts: r.ids.map((id) => byId.get(id)!).filter(Boolean),
    })),
  };
}
