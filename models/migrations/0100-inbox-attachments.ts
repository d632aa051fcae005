import { Sequelize } from "sequelize";

/**
 * The attachments of inbound mails, on their message: each
 * `{id, fileName, contentType, size, storage, storageKey, dropped}`, the
 * file in the assets' storage under `storageKey`, or `dropped`
 * (`too_large`, `too_many`) with no file. A constant default adds the
 * column without rewriting the table.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`ALTER TABLE inbox_messages ADD COLUMN attachments jsonb NOT NULL DEFAULT '[]'`);
}
