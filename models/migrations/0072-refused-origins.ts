import { Sequelize } from "sequelize";

/** The last browser origins a workspace's `allowedOrigins` refused, for its owner to see (`refusedOrigins`). */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`ALTER TABLE workspaces ADD COLUMN refused_origins jsonb NOT NULL DEFAULT '[]'`);
}
