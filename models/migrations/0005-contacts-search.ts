import { Sequelize } from "sequelize";

/**
 * Contact search on a stored, lower-cased text (email, names, phone) with a
 * trigram index: LIKE on it skips recomputing the expression per row. It
 * replaces the expression index of 0002, and the name index of 0003 (name
 * similarity for duplicates uses it too, through word similarity `<%`): one
 * trigram index less to maintain on every insert.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE contacts ADD COLUMN search_text text GENERATED ALWAYS AS (
      lower(coalesce(email, '') || ' ' || coalesce(first_name, '') || ' ' || coalesce(last_name, '') || ' ' || coalesce(phone, ''))
    ) STORED;
    CREATE INDEX contacts_search_text_idx ON contacts USING gin (search_text gin_trgm_ops);
    DROP INDEX IF EXISTS contacts_search_idx;
    DROP INDEX IF EXISTS contacts_name_trgm_idx;
  `);
}
