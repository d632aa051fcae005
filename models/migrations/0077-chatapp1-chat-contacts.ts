import { Sequelize } from "sequelize";

/**
 * Contacts of the chatapp1 bot: a chat id (`attributes.chatapp1ChatId`) is
 * enough to be a contact (someone who wrote to the bot has no other address
 * we know), and inbound messages find their contact by it.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE contacts DROP CONSTRAINT contacts_check;
    ALTER TABLE contacts ADD CONSTRAINT contacts_identity_check
      CHECK (email IS NOT NULL OR phone IS NOT NULL OR external_id IS NOT NULL OR attributes ? 'chatapp1ChatId');
    CREATE INDEX contacts_chatapp1_chat_idx ON contacts (workspace_id, (attributes->>'chatapp1ChatId'))
      WHERE (attributes->>'chatapp1ChatId') IS NOT NULL;
  `);
}
