import { Binds, likeEscape, query } from "../../lib/database";
import { selectPage, sortOrder, type Page, type PageRequest } from "../../lib/pagination";
import { contactView, type ContactRow, type ContactView } from "./contacts.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** The contacts a list filter selects: the page, the ids and rows in batches, and the keys and places they use. */

export interface ContactFilter {
  search?: string;
  tag?: string;
  stage?: string;
  createdFrom?: Date;
  createdTo?: Date;
  country?: string;
  city?: string;
  attributes?: Record<string, unknown>;
  customFields?: Record<string, unknown>;
  ids?: string[];
}

/** The filter's conditions; `b` binds from `$2` (`Binds.inWorkspace()`): the workspace is `$1`. */
export function filterWhere(filter: ContactFilter, b: Binds): string {
  const where = ["workspace_id = $1"];
  // `search_text` is lower-cased email, names and phone, trigram-indexed (migration 0005).
  if (filter.search?.trim())
    where.push(`search_text LIKE ${b.p(`%${likeEscape(filter.search.trim().toLowerCase())}%`)}`);
  if (filter.tag) where.push(`tags @> ARRAY[${b.p(filter.tag)}]::text[]`);
  if (filter.stage) where.push(`stage = ${b.p(filter.stage)}`);
  if (filter.country) where.push(`country = ${b.p(filter.country)}`);
  if (filter.city) where.push(`city = ${b.p(filter.city)}`);
  if (filter.createdFrom) where.push(`created_at >= ${b.p(filter.createdFrom)}`);
  if (filter.createdTo) where.push(`created_at <= ${b.p(filter.createdTo)}`);
  if (filter.ids) where.push(`id = ANY(${b.p(filter.ids)}::text[])`);
  for (const [column, values] of [
    ["attributes", filter.attributes],
    ["custom_fields", filter.customFields],
  ] as const) {
    for (const [key, value] of Object.entries(values ?? {})) {
      // Query strings carry text: match the value as a string, or as the number/boolean it spells.
      // Containment (@>) lets the GIN index on attributes answer.
      const alternatives = jsonAlternatives(String(value)).map(
        (v) => `${column} @> ${b.p(JSON.stringify({ [key]: v }))}::jsonb`,
      );
      where.push(`(${alternatives.join(" OR ")})`);
    }
  }
  return where.join(" AND ");
}

/** Pure: `"5"` may mean the string or the number 5; `"true"` the string or the boolean. */
export function jsonAlternatives(text: string): unknown[] {
  const out: unknown[] = [text];
  if (/^-?\d+(\.\d+)?$/.test(text) && Number.isFinite(Number(text))) out.push(Number(text));
  if (text === "true" || text === "false") out.push(text === "true");
  return out;
}

export const SORTABLE: Record<string, string> = {
  id: "id",
  createdAt: "created_at",
  updatedAt: "updated_at",
  email: "email",
  firstName: "first_name",
  lastName: "last_name",
  score: "score",
  stage: "stage",
  country: "country",
  city: "city",
};

export function orderBy(sort: string | undefined): string {
  return (
    sortOrder(sort, SORTABLE, "-createdAt")
      // PostgreSQL's default null placement, so (created_at DESC, id DESC) matches contacts_created_idx.
      .map(([column, direction]) => `${column} ${direction}`)
      .join(", ")
  );
}

export async function listContacts(
  workspaceId: WorkspaceId,
  filter: ContactFilter,
  sort: string | undefined,
  page: PageRequest,
): Promise<Page<ContactView>> {
  const order = orderBy(sort);
  const b = Binds.inWorkspace();
  const where = filterWhere(filter, b);
  return selectPage(
    workspaceId,
    {
      select: `SELECT * FROM contacts WHERE ${where}`,
      orderBy: order,
      countFrom: `FROM contacts WHERE ${where}`,
    },
    b.values,
    page,
    contactView,
  );
}

/** Ids matching a filter, in id order, `batch` at a time (keyset, so it scales to any size). */
export async function* idsMatching(
  workspaceId: WorkspaceId,
  filter: ContactFilter,
  batch = 1000,
): AsyncGenerator<string[]> {
  let after = "";
  for (;;) {
    const b = Binds.inWorkspace();
    const where = filterWhere(filter, b);
    const rows = await query<{ id: string }>(
      workspaceId,
      `SELECT id FROM contacts WHERE ${where} AND id > ${b.p(after)} ORDER BY id LIMIT ${batch}`,
      b.values,
    );
    if (!rows.length) return;
    yield rows.map((r) => r.id);
    after = rows[rows.length - 1].id;
  }
}

/** Full rows matching a filter, in id order, a batch at a time (export). */
export async function* rowsMatching(
  workspaceId: WorkspaceId,
  filter: ContactFilter,
  batch = 1000,
): AsyncGenerator<ContactRow[]> {
  let after = "";
  for (;;) {
    const b = Binds.inWorkspace();
    const where = filterWhere(filter, b);
    const rows = await query<ContactRow>(
      workspaceId,
      `SELECT * FROM contacts WHERE ${where} AND id > ${b.p(after)} ORDER BY id LIMIT ${batch}`,
      b.values,
    );
    if (!rows.length) return;
    yield rows;
    after = rows[rows.length - 1].id;
  }
}

/** Attribute keys in use, most used first, with the JSON types seen. */
export async function attributeKeys(
  workspaceId: WorkspaceId,
): Promise<Array<{ key: string; count: number; types: string[] }>> {
  const rows = await query<{ key: string; count: string; types: string[] }>(
    workspaceId,
    `SELECT kv.key, count(*) AS count, array_agg(DISTINCT jsonb_typeof(kv.value)) AS types
       FROM contacts c, jsonb_each(c.attributes) kv
      WHERE c.workspace_id = $1
      GROUP BY kv.key ORDER BY count(*) DESC, kv.key LIMIT 1000`,
  );
  return rows.map((r) => ({ key: r.key, count: Number(r.count), types: r.types }));
}

/** The attribute and custom field keys the matching contacts use, and the workspace's defined custom fields. */
export async function exportKeys(
  workspaceId: WorkspaceId,
  filter: ContactFilter,
): Promise<{ attrs: Array<{ key: string }>; custom: Array<{ key: string }>; defs: Array<{ key: string }> }> {
  const b = Binds.inWorkspace();
  const where = filterWhere(filter, b);
  const [attrs, custom, defs] = await Promise.all([
    query<{ key: string }>(
      workspaceId,
      `SELECT DISTINCT k AS key FROM contacts, jsonb_object_keys(attributes) k WHERE ${where} ORDER BY 1`,
      b.values,
    ),
    query<{ key: string }>(
      workspaceId,
      `SELECT DISTINCT k AS key FROM contacts, jsonb_object_keys(custom_fields) k WHERE ${where} ORDER BY 1`,
      b.values,
    ),
    query<{ key: string }>(
      workspaceId,
      `SELECT key FROM custom_fields WHERE workspace_id = $1 ORDER BY position, key`,
    ),
  ]);
  return { attrs, custom, defs };
}

/** Contact counts by country and by city (contacts without a country count under `null`). */
export async function geoCounts(
  workspaceId: WorkspaceId,
  country?: string,
): Promise<{
  countries: Array<{ country: string | null; count: number }>;
  cities: Array<{ country: string | null; city: string; count: number }>;
}> {
  const countries = await query<{ country: string | null; count: string }>(
    workspaceId,
    `SELECT country, count(*) AS count FROM contacts WHERE workspace_id = $1 GROUP BY country ORDER BY count(*) DESC, country NULLS LAST LIMIT 500`,
  );
  const b = Binds.inWorkspace();
  const where = ["workspace_id = $1", "city IS NOT NULL"];
  if (country) where.push(`country = ${b.p(country)}`);
  const cities = await query<{ country: string | null; city: string; count: string }>(
    workspaceId,
    `SELECT country, city, count(*) AS count FROM contacts WHERE ${where.join(" AND ")}
      GROUP BY country, city ORDER BY count(*) DESC, country NULLS LAST, city LIMIT 1000`,
    b.values,
  );
  return {
    countries: countries.map((r) => ({ country: r.country, count: Number(r.count) })),
    cities: cities.map((r) => ({ country: r.country, city: r.city, count: Number(r.count) })),
  };
}
