import { Sequelize } from "sequelize";

/**
 * Dashboard widgets become views of analytics answers (contract-messaging
 * 15): `{title, kind, endpoint, params, position}` in place of the CRM widget
 * `type` and its `config`. Existing widgets keep their title, position and
 * config (as params) and take the nearest analytics answer to what they
 * showed: counts of contacts the overview, contact growth the timeseries of
 * contacts, activity and lists (tasks, saved views) the activity answer, deal
 * stages the funnel, deal values the revenue.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE dashboard_widgets
      ADD COLUMN kind text,
      ADD COLUMN endpoint text;
    ALTER TABLE dashboard_widgets RENAME COLUMN config TO params;

    UPDATE dashboard_widgets SET
      kind = CASE type
               WHEN 'contacts_growth' THEN 'timeseries'
               WHEN 'deals_by_stage' THEN 'funnel'
               WHEN 'recent_activity' THEN 'table'
               WHEN 'tasks_due' THEN 'table'
               WHEN 'saved_view' THEN 'table'
               ELSE 'metric' END,
      endpoint = CASE type
                   WHEN 'contacts_growth' THEN 'timeseries'
                   WHEN 'deals_by_stage' THEN 'funnel'
                   WHEN 'deals_won_lost' THEN 'revenue'
                   WHEN 'pipeline_value' THEN 'revenue'
                   WHEN 'recent_activity' THEN 'activity'
                   WHEN 'tasks_due' THEN 'activity'
                   WHEN 'saved_view' THEN 'activity'
                   ELSE 'overview' END,
      params = CASE WHEN type = 'contacts_growth' THEN jsonb_build_object('metric', 'contacts') || params
                    ELSE params END;

    ALTER TABLE dashboard_widgets
      ALTER COLUMN kind SET NOT NULL,
      ALTER COLUMN endpoint SET NOT NULL,
      DROP COLUMN type;
  `);
}
