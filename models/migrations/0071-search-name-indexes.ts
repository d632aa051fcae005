import { Sequelize } from "sequelize";

/** `{ws}/search` finds campaigns, templates, segments and forms by name: trigram indexes like those of contacts, companies and deals. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE INDEX campaigns_search_idx ON campaigns USING gin ((lower(name)) gin_trgm_ops);
    CREATE INDEX templates_search_idx ON templates USING gin ((lower(name)) gin_trgm_ops);
    CREATE INDEX segments_search_idx ON segments USING gin ((lower(name)) gin_trgm_ops);
    CREATE INDEX forms_search_idx ON forms USING gin ((lower(name)) gin_trgm_ops);
  `);
}
