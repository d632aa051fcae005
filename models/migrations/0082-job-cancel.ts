import { Sequelize } from "sequelize";

/**
 * A job that may be stopped halfway names the permission its cancel needs
 * (null: it runs to its end). Existing jobs cannot be cancelled.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`ALTER TABLE jobs ADD COLUMN cancel_permission text`);
}
