import { newId } from "../../lib/crypto";
import { Binds, likeEscape, query, queryAcrossWorkspaces, uniqueViolation } from "../../lib/database";
import { conflict } from "../../lib/errors";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { LandingPageView } from "./content.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** The SQL of landing pages; every statement but the public page's is scoped by workspace. */

interface PageRow {
  id: string;
  workspace_id: WorkspaceId;
  workspace_slug: string;
  name: string;
  slug: string;
  title: string;
  html: string;
  status: "draft" | "published";
  published_at: Date | null;
  views: number;
  created_at: Date;
  updated_at: Date;
}

export interface PageInput {
  name: string;
  slug: string;
  title: string;
  html: string;
  status: "draft" | "published";
}

const SELECT = `SELECT p.*, w.slug AS workspace_slug FROM landing_pages p JOIN workspaces w ON w.id = p.workspace_id`;

const view = (r: PageRow, publicUrl: string): LandingPageView => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  title: r.title,
  html: r.html,
  status: r.status,
  publishedAt: r.published_at?.toISOString() ?? null,
  views: r.views,
  url: `${publicUrl}/p/${r.workspace_slug}/${r.slug}`,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

/** A slug another page of the workspace has: 409. */
function slugTaken(err: unknown): never {
  if (uniqueViolation(err) === "landing_pages_slug_uq") throw conflict("Another landing page has this slug");
  throw err;
}

export async function listPages(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: { status?: string; search?: string },
  publicUrl: string,
): Promise<Page<LandingPageView>> {
  const binds = Binds.inWorkspace();
  const where = ["p.workspace_id = $1"];
  if (filter.status) where.push(`p.status = ${binds.p(filter.status)}`);
  if (filter.search) {
    const like = binds.p(`%${likeEscape(filter.search)}%`);
    where.push(`(p.name ILIKE ${like} OR p.slug ILIKE ${like})`);
  }
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    {
      select: `${SELECT} WHERE ${clause}`,
      orderBy: "p.created_at DESC, p.id DESC",
      countFrom: `FROM landing_pages p WHERE ${clause}`,
    },
    binds.values,
    page,
    (r: PageRow) => view(r, publicUrl),
  );
}

export async function findPage(
  workspaceId: WorkspaceId,
  id: string,
  publicUrl: string,
): Promise<LandingPageView | null> {
  const [row] = await query<PageRow>(workspaceId, `${SELECT} WHERE p.workspace_id = $1 AND p.id = $2`, [id]);
  return row ? view(row, publicUrl) : null;
}

export async function insertPage(workspaceId: WorkspaceId, input: PageInput): Promise<string> {
  const id = newId();
  await query(
    workspaceId,
    `INSERT INTO landing_pages (id, workspace_id, name, slug, title, html, status, published_at)
     VALUES ($2, $1, $3, $4, $5, $6, $7, CASE WHEN $7 = 'published' THEN now() END)`,
    [id, input.name, input.slug, input.title, input.html, input.status],
  ).catch(slugTaken);
  return id;
}

/** Replace a page; publishing stamps `published_at`, a page that stays published keeps its stamp. False when there is none. */
export async function replacePage(workspaceId: WorkspaceId, id: string, input: PageInput): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `UPDATE landing_pages SET name = $3, slug = $4, title = $5, html = $6, status = $7,
            published_at = CASE WHEN $7 = 'published' AND status <> 'published' THEN now()
                                WHEN $7 = 'published' THEN published_at END,
            updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id, input.name, input.slug, input.title, input.html, input.status],
  ).catch(slugTaken);
  return rows.length > 0;
}

export async function deletePage(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `DELETE FROM landing_pages WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

/** A published page by its address, counted as one view unless `counted` is false; null when there is none (or it is a draft). */
export async function viewPublished(
  workspaceSlug: string,
  slug: string,
  counted = true,
): Promise<{ id: string; workspaceId: WorkspaceId; title: string; html: string } | null> {
  const [row] = await queryAcrossWorkspaces<{
    id: string;
    workspace_id: WorkspaceId;
    title: string;
    html: string;
  }>(
    counted
      ? `UPDATE landing_pages p SET views = p.views + 1
           FROM workspaces w
          WHERE w.id = p.workspace_id AND w.slug = $1 AND p.slug = $2 AND p.status = 'published'
         RETURNING p.id, p.workspace_id, p.title, p.html`
      : `SELECT p.id, p.workspace_id, p.title, p.html FROM landing_pages p JOIN workspaces w ON w.id = p.workspace_id
          WHERE w.slug = $1 AND p.slug = $2 AND p.status = 'published'`,
    [workspaceSlug, slug],
  );
  return row ? { id: row.id, workspaceId: row.workspace_id, title: row.title, html: row.html } : null;
}
