import { MicroBatcher } from "../../lib/batcher";
import { newId } from "../../lib/crypto";
import { Binds, likeEscape, query, queryAcrossWorkspaces } from "../../lib/database";
import { selectPage, sortOrder, type Page, type PageRequest } from "../../lib/pagination";
import { retentionPurge } from "../../lib/retention";
import type { FormField, FormSettings, FormView, SubmissionView } from "./forms.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** The SQL of forms, their submissions and their daily views; every statement is scoped by workspace. */

interface FormRow {
  id: string;
  workspace_id: WorkspaceId;
  name: string;
  active: boolean;
  fields: FormField[];
  settings: FormSettings;
  created_at: Date;
  updated_at: Date;
}

export interface FormInput {
  name: string;
  active: boolean;
  fields: FormField[];
  settings: FormSettings;
}

const view = (r: FormRow): FormView => ({
  id: r.id,
  name: r.name,
  active: r.active,
  fields: r.fields,
  settings: r.settings,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

const SORTABLE = { name: "name", createdAt: "created_at", updatedAt: "updated_at" };

export async function listForms(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: { search?: string; active?: boolean; sort?: string },
): Promise<Page<FormView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filter.search) where.push(`name ILIKE ${binds.p(`%${likeEscape(filter.search)}%`)}`);
  if (filter.active !== undefined) where.push(`active = ${binds.p(filter.active)}`);
  const order = sortOrder(filter.sort, SORTABLE, "-createdAt")
    .map(([column, direction]) => `${column} ${direction}`)
    .join(", ");
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM forms WHERE ${clause}`, orderBy: order },
    binds.values,
    page,
    view,
  );
}

export async function findForm(workspaceId: WorkspaceId, id: string): Promise<FormView | null> {
  const [row] = await query<FormRow>(workspaceId, `SELECT * FROM forms WHERE workspace_id = $1 AND id = $2`, [
    id,
  ]);
  return row ? view(row) : null;
}

/** The workspace's active forms among `ids`, by id (a landing page draws them). */
export async function activeFormsNamed(workspaceId: WorkspaceId, ids: string[]): Promise<FormView[]> {
  const rows = await query<FormRow>(
    workspaceId,
    `SELECT * FROM forms WHERE workspace_id = $1 AND id = ANY($2::text[]) AND active`,
    [ids],
  );
  return rows.map(view);
}

/** The workspace's active forms, newest first (the website script's config). */
export async function activeForms(workspaceId: WorkspaceId): Promise<Array<{ id: string; name: string }>> {
  return query<{ id: string; name: string }>(
    workspaceId,
    `SELECT id, name FROM forms WHERE workspace_id = $1 AND active ORDER BY created_at DESC, id DESC LIMIT 200`,
  );
}

/** A form by id alone, for its public pages and submissions: with its workspace and that workspace's `allowedOrigins`. */
export type PublicForm = FormView & { workspaceId: WorkspaceId; allowedOrigins: string[] | null };

/**
 * Concurrent visitors' forms are read together, each with its workspace's
 * origins (who may post it, where it may redirect) in the same statement: the
 * workspaces service's column, only read.
 */
const publicForms = new MicroBatcher(
  async (ids: string[]): Promise<Array<PublicForm | null>> => {
    const rows = await queryAcrossWorkspaces<FormRow & { allowed_origins: unknown }>(
      `SELECT f.*, w.settings -> 'allowedOrigins' AS allowed_origins
         FROM forms f JOIN workspaces w ON w.id = f.workspace_id WHERE f.id = ANY ($1::text[])`,
      [[...new Set(ids)]],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => {
      const row = byId.get(id);
      if (!row) return null;
      const origins = Array.isArray(row.allowed_origins) ? (row.allowed_origins as string[]) : null;
      return { ...view(row), workspaceId: row.workspace_id, allowedOrigins: origins };
    });
  },
  { maxBatch: 200, lanes: 1 },
);

export const findPublicForm = (id: string) => publicForms.add(id);

export async function insertForm(workspaceId: WorkspaceId, input: FormInput): Promise<string> {
  const id = newId();
  await query(
    workspaceId,
    `INSERT INTO forms (id, workspace_id, name, active, fields, settings) VALUES ($2, $1, $3, $4, $5::jsonb, $6::jsonb)`,
    [id, input.name, input.active, JSON.stringify(input.fields), JSON.stringify(input.settings)],
  );
  return id;
}

/** Replace a form's definition; false when there is none. */
export async function replaceForm(workspaceId: WorkspaceId, id: string, input: FormInput): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `UPDATE forms SET name = $3, active = $4, fields = $5::jsonb, settings = $6::jsonb, updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id, input.name, input.active, JSON.stringify(input.fields), JSON.stringify(input.settings)],
  );
  return rows.length > 0;
}

export async function deleteForm(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `DELETE FROM forms WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

/** One view of a form today (its hosted page or its embed drawn). */
export async function countView(formId: string): Promise<void> {
  await queryAcrossWorkspaces(
    `INSERT INTO form_views (form_id, day, views) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 1)
     ON CONFLICT (form_id, day) DO UPDATE SET views = form_views.views + 1`,
    [formId],
  );
}

export interface NewSubmission {
  workspaceId: WorkspaceId;
  formId: string;
  contactId: string | null;
  fields: Record<string, unknown>;
  pageUrl: string | null;
  ip: string | null;
  userAgent: string | null;
  consent: SubmissionView["consent"];
}

/** Concurrent submissions are stored by one statement; each answers its new id. */
const submissionWriter = new MicroBatcher(
  async (submissions: NewSubmission[]): Promise<string[]> => {
    const rows = submissions.map((s) => ({
      id: newId(),
      workspace_id: s.workspaceId,
      form_id: s.formId,
      contact_id: s.contactId,
      fields: s.fields,
      page_url: s.pageUrl,
      ip: s.ip,
      user_agent: s.userAgent,
      consent: s.consent,
    }));
    await queryAcrossWorkspaces(
      `INSERT INTO form_submissions (id, workspace_id, form_id, contact_id, fields, page_url, ip, user_agent, consent)
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(id text, workspace_id text, form_id text, contact_id text,
                     fields jsonb, page_url text, ip text, user_agent text, consent jsonb)`,
      [JSON.stringify(rows)],
    );
    return rows.map((r) => r.id);
  },
  { maxBatch: 200, lanes: 1 },
);

export const insertSubmission = (s: NewSubmission): Promise<string> => submissionWriter.add(s);

interface SubmissionRow {
  id: string;
  form_id: string;
  contact_id: string | null;
  fields: Record<string, unknown>;
  page_url: string | null;
  consent: SubmissionView["consent"];
  ip: string | null;
  user_agent: string | null;
  created_at: Date;
}

export async function listSubmissions(
  workspaceId: WorkspaceId,
  formId: string,
  page: PageRequest,
  range: { from?: string; to?: string },
): Promise<Page<SubmissionView>> {
  const binds = Binds.inWorkspace([formId]);
  const where = ["workspace_id = $1", "form_id = $2"];
  if (range.from) where.push(`created_at >= ${binds.p(range.from, "timestamptz")}`);
  if (range.to) where.push(`created_at < ${binds.p(range.to, "timestamptz")}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM form_submissions WHERE ${clause}`, orderBy: "created_at DESC, id DESC" },
    binds.values,
    page,
    (r: SubmissionRow) => ({
      id: r.id,
      formId: r.form_id,
      contactId: r.contact_id,
      fields: r.fields,
      pageUrl: r.page_url,
      consent: r.consent,
      ip: r.ip,
      userAgent: r.user_agent,
      createdAt: r.created_at.toISOString(),
    }),
  );
}

/** Views and submissions of each day from `from` to `to` (UTC dates, both included). */
export async function dailyCounts(
  workspaceId: WorkspaceId,
  formId: string,
  from: string,
  to: string,
): Promise<Array<{ date: string; views: number; submissions: number }>> {
  const rows = await query<{ date: string; views: string; submissions: string }>(
    workspaceId,
    `SELECT to_char(d.day, 'YYYY-MM-DD') AS date, coalesce(v.views, 0) AS views, coalesce(s.n, 0) AS submissions
       FROM generate_series($3::date, $4::date, interval '1 day') AS d(day)
       LEFT JOIN form_views v ON v.form_id = $2 AND v.day = d.day::date
       LEFT JOIN (SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n
                    FROM form_submissions
                   WHERE workspace_id = $1 AND form_id = $2
                     AND created_at >= $3::date AT TIME ZONE 'UTC' AND created_at < ($4::date + 1) AT TIME ZONE 'UTC'
                   GROUP BY 1) s ON s.day = d.day::date
      ORDER BY d.day`,
    [formId, from, to],
  );
  return rows.map((r) => ({ date: r.date, views: Number(r.views), submissions: Number(r.submissions) }));
}

/** Retention: the workspace's form submissions created before `before`, in batches oldest first (lib/retention.ts). */
export const { countBefore: countSubmissionsBefore, deleteBefore: deleteSubmissionsBefore } = retentionPurge(
  { table: "form_submissions", timeColumn: "created_at" },
  query,
);
