import { Sequelize } from "sequelize";

/**
 * A fact whose send or consumer failed stays staged, on its own backoff: the
 * relay counts its attempts and holds it back until `available_at`, so one
 * failing fact is retried without resending the facts relayed beside it and
 * without holding up those staged after it. A staging insert pays nothing
 * for them: a constant default and NULLs.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE domain_event_outbox
      ADD COLUMN attempts     integer NOT NULL DEFAULT 0,
      ADD COLUMN available_at timestamptz,
      ADD COLUMN last_error   text
  `);
}
