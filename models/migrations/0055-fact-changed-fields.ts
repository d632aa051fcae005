import { Sequelize } from "sequelize";

/**
 * A `contact.updated` fact carries the names of the fields its write changed
 * beside its payload (which the specification fixes and webhooks send as
 * is): campaigns' `contact_updated {fields}` triggers read them. Facts of
 * other types leave it NULL.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`ALTER TABLE domain_event_outbox ADD COLUMN changed_fields jsonb`);
}
