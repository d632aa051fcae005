import { Sequelize } from "sequelize";

/**
 * Room on each contacts page for updated row versions: a score change (every
 * scored event) then stays a HOT update, which writes no index entry, instead
 * of touching every index of the table (several GIN among them). Pages
 * written from now on keep 10 % free.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`ALTER TABLE contacts SET (fillfactor = 90)`);
}
