import { QueryTypes, type Sequelize } from "sequelize";
import { createSequelize } from "../../../lib/database";
import { migrations } from "../../../models/migrations";
import { emptyDatabase } from "../../helpers/database";

/** Migration 0103 on a database holding deliveries: the queued ones move into the queue with their leases. */
let db: Awaited<ReturnType<typeof emptyDatabase>>;
let sequelize: Sequelize;

beforeAll(async () => {
  db = await emptyDatabase();
  sequelize = createSequelize(db.url);
}, 30_000);
afterAll(async () => {
  await sequelize.close();
  await db.drop();
});

const select = <T extends object>(sql: string) => sequelize.query<T>(sql, { type: QueryTypes.SELECT });

test("0103 queues the pending outbound deliveries (leases kept), none other, and later inserts through its trigger", async () => {
  const at = migrations.findIndex((m) => m.name === "0103-webhook-delivery-queue");
  for (const m of migrations.slice(0, at)) await m.up(sequelize);
  await sequelize.query(`
    INSERT INTO workspaces (id, name, slug) VALUES ('ws', 'W', 'w');
    INSERT INTO webhook_endpoints (id, workspace_id, url) VALUES ('ep', 'ws', 'http://127.0.0.1:9/');
    INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, attempt, success,
                                    next_attempt_at, claimed_until, claim_token, claimed_by, created_at)
    VALUES ('due', 'ws', 'ep', 'e', 'OUTBOUND', '{}', 0, false, now(), NULL, NULL, NULL, now() - interval '3 minutes'),
           ('retry', 'ws', 'ep', 'e', 'OUTBOUND', '{}', 1, false, now() + interval '8 seconds', NULL, NULL, 'node-a',
            now() - interval '2 minutes'),
           ('claimed', 'ws', 'ep', 'e', 'OUTBOUND', '{}', 0, false, now(), now() + interval '30 seconds', 'tok',
            'node-b', now() - interval '1 minute'),
           ('sent', 'ws', 'ep', 'e', 'OUTBOUND', '{}', 1, true, NULL, NULL, NULL, 'node-a', now()),
           ('in', 'ws', 'ep', 'e', 'INBOUND', '{}', 0, true, NULL, NULL, NULL, NULL, now());
  `);
  for (const m of migrations.slice(at)) await m.up(sequelize);

  const queued = await select<{ delivery_id: string; claimed: boolean; claim_token: string | null }>(
    `SELECT delivery_id, claimed_until > now() AS claimed, claim_token FROM webhook_delivery_queue ORDER BY created_at`,
  );
  expect(queued).toEqual([
    { delivery_id: "due", claimed: null, claim_token: null },
    { delivery_id: "retry", claimed: null, claim_token: null },
    { delivery_id: "claimed", claimed: true, claim_token: "tok" },
  ]);
  // The history keeps no lease and no queue index (0106, run after it, built none).
  const columns = await select<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_name = 'webhook_deliveries'
        AND column_name IN ('claimed_until', 'claim_token', 'claimed_by')`,
  );
  expect(columns.map((c) => c.column_name)).toEqual(["claimed_by"]);
  const indexes = await select<{ indexname: string }>(
    `SELECT indexname FROM pg_indexes WHERE tablename = 'webhook_deliveries' ORDER BY indexname`,
  );
  expect(indexes.map((i) => i.indexname)).toEqual([
    "webhook_deliveries_endpoint_idx",
    "webhook_deliveries_list_idx",
    "webhook_deliveries_pkey",
    "webhook_deliveries_source_uq",
  ]);

  // An insert of the history queues its pending outbound rows; a delivery deleted takes its queued row along.
  await sequelize.query(`
    INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, next_attempt_at)
    VALUES ('new', 'ws', 'ep', 'e', 'OUTBOUND', '{}', now()), ('new-in', 'ws', 'ep', 'e', 'INBOUND', '{}', now()),
           ('new-done', 'ws', 'ep', 'e', 'OUTBOUND', '{}', NULL);
    DELETE FROM webhook_deliveries WHERE id = 'due';
  `);
  const after = await select<{ delivery_id: string }>(
    `SELECT delivery_id FROM webhook_delivery_queue ORDER BY delivery_id`,
  );
  expect(after.map((r) => r.delivery_id)).toEqual(["claimed", "new", "retry"]);
}, 120_000);
