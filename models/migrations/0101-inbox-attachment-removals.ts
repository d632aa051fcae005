import { Sequelize } from "sequelize";

/**
 * Stored attachments (0100) whose message is gone, waiting for their file to
 * be removed from the assets' storage. However a message row goes (a thread
 * or contact deleted and cascading, a GDPR erasure, a bulk delete, a merge),
 * the statement-level trigger queues one row per stored attachment in the
 * deleting transaction, so a file is never orphaned by a path that forgot
 * it; `inbox.sweepAttachmentRemovals` removes the files and the rows. No
 * foreign key: a deleted workspace's rows must outlive it to be swept.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE inbox_attachment_removals (
      id           bigserial PRIMARY KEY,
      workspace_id text NOT NULL,
      storage      text NOT NULL CHECK (storage IN ('local', 's3')),
      storage_key  text NOT NULL,
      queued_at    timestamptz NOT NULL DEFAULT now()
    );

    CREATE FUNCTION inbox_messages_deleted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO inbox_attachment_removals (workspace_id, storage, storage_key)
      SELECT o.workspace_id, a ->> 'storage', a ->> 'storageKey'
        FROM old_rows o, jsonb_array_elements(o.attachments) AS a
       WHERE a ->> 'storage' IS NOT NULL AND a ->> 'storageKey' IS NOT NULL;
      RETURN NULL;
    END
    $fn$;

    CREATE TRIGGER inbox_messages_deleted AFTER DELETE ON inbox_messages
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION inbox_messages_deleted();
  `);
}
