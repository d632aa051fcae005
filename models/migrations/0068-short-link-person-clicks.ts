import { Sequelize } from "sequelize";

/**
 * A link's clicks by people, apart from all its clicks: a scanner that
 * follows the link first must not take the person's unique click. Rows
 * already there counted their first click as unique, so they keep it.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE short_link_clicks ADD COLUMN person_clicks integer NOT NULL DEFAULT 0;
    UPDATE short_link_clicks SET person_clicks = clicks;
  `);
}
