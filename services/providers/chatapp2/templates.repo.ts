import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { bodyParameterNames, type SyncedTemplate } from "./templates";

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
export async function listTemplates(workspaceId: string): Promise<TemplateView[]> {
  const sequelize = await database();
  const rows = await sequelize.query<TemplateRow>(
    `SELECT * FROM chatapp2_templates WHERE workspace_id = $1 ORDER BY name, language`,
    { bind: [workspaceId], type: QueryTypes.SELECT },
  );
  return rows.map(view);
}

/** The templates of one name (each approved language). */
export async function templatesNamed(workspaceId: string, name: string): Promise<TemplateView[]> {
  const sequelize = await database();
  const rows = await sequelize.query<TemplateRow>(
    `SELECT * FROM chatapp2_templates WHERE workspace_id = $1 AND name = $2 ORDER BY language`,
    { bind: [workspaceId, name], type: QueryTypes.SELECT },
  );
  return rows.map(view);
}

/** The body parameter names of a synced template in one language (null: positional, or not synced). */
export async function parameterNames(
  workspaceId: string,
  name: string,
  language: string,
): Promise<string[] | null> {
  const sequelize = await database();
  const [row] = await sequelize.query<{ components: unknown[] }>(
    `SELECT components FROM chatapp2_templates WHERE workspace_id = $1 AND name = $2 AND language = $3`,
    { bind: [workspaceId, name, language], type: QueryTypes.SELECT },
  );
  return row ? bodyParameterNames(row.components) : null;
}

/** The synced set replaces the previous one, in one transaction (a reader sees the old set or the new). */
export async function replaceTemplates(
  workspaceId: string,
  providerId: string,
  templates: SyncedTemplate[],
): Promise<void> {
  const sequelize = await database();
  await sequelize.transaction(async (transaction) => {
    await sequelize.query(`DELETE FROM chatapp2_templates WHERE workspace_id = $1`, {
      bind: [workspaceId],
      transaction,
    });
    if (!templates.length) return;
    await sequelize.query(
      `INSERT INTO chatapp2_templates (workspace_id, provider_id, name, language, category, parameter_count, components)
       SELECT $1, $2, t.name, t.language, t.category, t.parameter_count, t.components
         FROM jsonb_to_recordset($3::jsonb)
           AS t(name text, language text, category text, parameter_count integer, components jsonb)
       ON CONFLICT (workspace_id, name, language) DO NOTHING`,
      {
        bind: [
          workspaceId,
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
      },
    );
  });
}
