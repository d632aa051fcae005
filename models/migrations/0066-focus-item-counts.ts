import { Sequelize } from "sequelize";

/** Each focus item's views and conversions, counted as the website script reports them. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE focus_items
      ADD COLUMN views       integer NOT NULL DEFAULT 0,
      ADD COLUMN conversions integer NOT NULL DEFAULT 0
  `);
}
