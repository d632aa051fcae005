import { type Transaction } from "sequelize";
import { Binds, likeEscape, query, uniqueViolation } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { Channel } from "../../lib/channels";
import type { Content, Variant } from "./render";
import type { TemplateView, TranslationView } from "./templates.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query of the templates area. Workspace id first. */

export interface AbState {
  variants: Array<Variant & { content: Content }>;
  metric: "open" | "click";
  winner: string | null;
}

interface TemplateRow {
  id: string;
  name: string;
  channel: Channel;
  locale: string;
  content: Content;
  tags: string[];
  translations: string[] | null;
  created_at: Date;
  updated_at: Date;
}

const view = (r: TemplateRow): TemplateView => ({
  id: r.id,
  name: r.name,
  channel: r.channel,
  locale: r.locale,
  content: r.content as TemplateView["content"],
  tags: r.tags,
  translations: r.translations ?? [],
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const SELECT_TEMPLATE = `
  SELECT t.id, t.name, t.channel, t.locale, t.content, t.tags, t.created_at, t.updated_at,
         (SELECT array_agg(tr.locale ORDER BY tr.locale) FROM template_translations tr WHERE tr.template_id = t.id) AS translations
    FROM templates t`;

export async function listTemplates(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: { channel?: string; tag?: string; search?: string },
): Promise<Page<TemplateView>> {
  const binds = Binds.inWorkspace();
  const where = ["t.workspace_id = $1"];
  if (filter.channel) where.push(`t.channel = ${binds.p(filter.channel)}`);
  if (filter.tag) where.push(`${binds.p(filter.tag)} = ANY (t.tags)`);
  if (filter.search) where.push(`t.name ILIKE ${binds.p(`%${likeEscape(filter.search)}%`)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    {
      select: `${SELECT_TEMPLATE} WHERE ${clause}`,
      orderBy: "t.created_at DESC, t.id DESC",
      countFrom: `FROM templates t WHERE ${clause}`,
    },
    binds.values,
    page,
    view,
  );
}

export async function getTemplate(
  workspaceId: WorkspaceId,
  id: string,
  transaction?: Transaction,
): Promise<TemplateView | null> {
  const [row] = await query<TemplateRow>(
    workspaceId,
    `${SELECT_TEMPLATE} WHERE t.workspace_id = $1 AND t.id = $2`,
    [id],
    transaction,
  );
  return row ? view(row) : null;
}

export async function insertTemplate(
  workspaceId: WorkspaceId,
  id: string,
  t: { name: string; channel: Channel; locale: string; content: Content; tags: string[] },
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO templates (id, workspace_id, name, channel, locale, content, tags)
     VALUES ($2, $1, $3, $4, $5, $6::jsonb, $7::text[])`,
    [id, t.name, t.channel, t.locale, JSON.stringify(t.content), t.tags],
  );
}

/** Set the given fields; false when the template does not exist. */
export async function updateTemplate(
  workspaceId: WorkspaceId,
  id: string,
  changes: { name?: string; locale?: string; content?: Content; tags?: string[] },
): Promise<boolean> {
  const binds = Binds.inWorkspace([id]);
  const sets = ["updated_at = now()"];
  if (changes.name !== undefined) sets.push(`name = ${binds.p(changes.name)}`);
  if (changes.locale !== undefined) sets.push(`locale = ${binds.p(changes.locale)}`);
  if (changes.content !== undefined)
    sets.push(`content = ${binds.p(JSON.stringify(changes.content), "jsonb")}`);
  if (changes.tags !== undefined) sets.push(`tags = ${binds.p(changes.tags, "text[]")}`);
  const rows = await query(
    workspaceId,
    `UPDATE templates SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    binds.values,
  );
  return rows.length > 0;
}

export async function deleteTemplate(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `DELETE FROM templates WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

interface TranslationRow {
  locale: string;
  content: Content;
  created_at: Date;
  updated_at: Date;
}

const translationView = (r: TranslationRow): TranslationView => ({
  locale: r.locale,
  content: r.content,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function listTranslations(
  workspaceId: WorkspaceId,
  templateId: string,
): Promise<TranslationView[]> {
  const rows = await query<TranslationRow>(
    workspaceId,
    `SELECT locale, content, created_at, updated_at FROM template_translations
      WHERE workspace_id = $1 AND template_id = $2 ORDER BY locale`,
    [templateId],
  );
  return rows.map(translationView);
}

export async function getTranslation(
  workspaceId: WorkspaceId,
  templateId: string,
  locale: string,
): Promise<TranslationView | null> {
  const [row] = await query<TranslationRow>(
    workspaceId,
    `SELECT locale, content, created_at, updated_at FROM template_translations
      WHERE workspace_id = $1 AND template_id = $2 AND lower(locale) = lower($3)`,
    [templateId, locale],
  );
  return row ? translationView(row) : null;
}

/** Insert a translation; false when the locale already has one. */
export async function insertTranslation(
  workspaceId: WorkspaceId,
  templateId: string,
  locale: string,
  content: Content,
): Promise<boolean> {
  try {
    await query(
      workspaceId,
      `INSERT INTO template_translations (template_id, workspace_id, locale, content) VALUES ($2, $1, $3, $4::jsonb)`,
      [templateId, locale, JSON.stringify(content)],
    );
    return true;
  } catch (err) {
    if (uniqueViolation(err)) return false;
    throw err;
  }
}

/** Insert or replace a translation (machine translation with `overwrite`). */
export async function upsertTranslation(
  workspaceId: WorkspaceId,
  templateId: string,
  locale: string,
  content: Content,
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO template_translations (template_id, workspace_id, locale, content) VALUES ($2, $1, $3, $4::jsonb)
     ON CONFLICT (template_id, locale) DO UPDATE SET content = EXCLUDED.content, updated_at = now()`,
    [templateId, locale, JSON.stringify(content)],
  );
}

export async function updateTranslation(
  workspaceId: WorkspaceId,
  templateId: string,
  locale: string,
  content: Content,
): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `UPDATE template_translations SET content = $4::jsonb, updated_at = now()
      WHERE workspace_id = $1 AND template_id = $2 AND lower(locale) = lower($3) RETURNING locale`,
    [templateId, locale, JSON.stringify(content)],
  );
  return rows.length > 0;
}

export async function deleteTranslation(
  workspaceId: WorkspaceId,
  templateId: string,
  locale: string,
): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `DELETE FROM template_translations WHERE workspace_id = $1 AND template_id = $2 AND lower(locale) = lower($3) RETURNING locale`,
    [templateId, locale],
  );
  return rows.length > 0;
}

/** The template's A/B test; null when it has none (undefined when the template does not exist). */
export async function getAb(
  workspaceId: WorkspaceId,
  templateId: string,
): Promise<AbState | null | undefined> {
  const [row] = await query<{ ab: AbState | null }>(
    workspaceId,
    `SELECT ab FROM templates WHERE workspace_id = $1 AND id = $2`,
    [templateId],
  );
  return row ? row.ab : undefined;
}

/** The workspace's templates that have an A/B test, newest first. */
export async function listAbs(workspaceId: WorkspaceId): Promise<Array<{ templateId: string; ab: AbState }>> {
  const rows = await query<{ id: string; ab: AbState }>(
    workspaceId,
    `SELECT id, ab FROM templates WHERE workspace_id = $1 AND ab IS NOT NULL ORDER BY created_at DESC, id DESC`,
  );
  return rows.map((r) => ({ templateId: r.id, ab: r.ab }));
}

export async function setAb(
  workspaceId: WorkspaceId,
  templateId: string,
  ab: AbState | null,
): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `UPDATE templates SET ab = $3::jsonb, updated_at = now() WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [templateId, ab ? JSON.stringify(ab) : null],
  );
  return rows.length > 0;
}

/** Everything a send renders from: the template, its translations by locale, its A/B test. */
export async function resolveTemplate(
  workspaceId: WorkspaceId,
  templateId: string,
): Promise<{ template: TemplateView; translations: Record<string, Content>; ab: AbState | null } | null> {
  const [template, ab, translations] = await Promise.all([
    getTemplate(workspaceId, templateId),
    getAb(workspaceId, templateId),
    listTranslations(workspaceId, templateId),
  ]);
  if (!template) return null;
  return {
    template,
    translations: Object.fromEntries(translations.map((t) => [t.locale, t.content])),
    ab: ab ?? null,
  };
}
