import { database, query } from "../../../lib/database";
import { bodyParameterNames, type SyncedTemplate } from "./templates";
import type { WorkspaceId } from "../../../lib/tenancy";

/** The queries of chatapp2's synced templates. Workspace id first. */

interface TemplateRow {
  name: string;
  language: string;
  category: string;
  parameter_count: number;
  components: unknown[];
  synced_at: Date;
}

export interface TemplateView extends SyncedTemplate {
  syncedAt: Date;
}

const view = (r: TemplateRow): TemplateView => ({
  name: r.name,
  language: r.language,
  category: r.category,
  parameterCount: r.parameter_count,
  components: r.components,
  syncedAt: r.synced_at,
});

/** The workspace's templates, by name and language. */
export async function listTemplates(workspaceId: WorkspaceId): Promise<TemplateView[]> {
  const rows = await query<TemplateRow>(
    workspaceId,
    `SELECT * FROM chatapp2_templates WHERE workspace_id = $1 ORDER BY name, language`,
  );
  return rows.map(view);
}

/** The templates of one name (each approved language). */
export async function templatesNamed(workspaceId: WorkspaceId, name: string): Promise<TemplateView[]> {
  const rows = await query<TemplateRow>(
    workspaceId,
    `SELECT * FROM chatapp2_templates WHERE workspace_id = $1 AND name = $2 ORDER BY language`,
    [name],
  );
  return rows.map(view);
}

/** The body parameter names of a synced template in one language (null: positional, or not synced). */
export async function parameterNames(
  workspaceId: WorkspaceId,
  name: string,
  language: string,
): Promise<string[] | null> {
  const [row] = await query<{ components: unknown[] }>(
    workspaceId,
    `SELECT components FROM chatapp2_templates WHERE workspace_id = $1 AND name = $2 AND language = $3`,
    [name, language],
  );
  return row ? bodyParameterNames(row.components) : null;
}

/** The synced set replaces the previous one, in one transaction (a reader sees the old set or the new). */
export async function replaceTemplates(
  workspaceId: WorkspaceId,
  providerId: string,
  templates: SyncedTemplate[],
): Promise<void> {
  const sequelize = await database();
  await sequelize.transaction(async (transaction) => {
    await query(workspaceId, `DELETE FROM chatapp2_templates WHERE workspace_id = $1`, [], transaction);
    if (!templates.length) return;
    await query(
      workspaceId,
      `INSERT INTO chatapp2_templates (workspace_id, provider_id, name, language, category, parameter_count, components)
       SELECT $1, $2, t.name, t.language, t.category, t.parameter_count, t.components
         FROM jsonb_to_recordset($3::jsonb)
           AS t(name text, language text, category text, parameter_count integer, components jsonb)
       ON CONFLICT (workspace_id, name, language) DO NOTHING`,
      [
        providerId,
        JSON.stringify(
          templates.map((t) => ({
            name: t.name,
            language: t.language,
            category: t.category,
            parameter_count: t.parameterCount,
            components: t.components,
          })),
        ),
      ],
      transaction,
    );
  });
}
