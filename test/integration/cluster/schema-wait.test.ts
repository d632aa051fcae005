import { Client } from "pg";
import { migrations } from "../../../models/migrations";
import { startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { waitFor } from "../../helpers/wait";

/**
 * MIGRATE=false, the Kubernetes shape: a node migrates nothing and starts
 * only once the migration job has applied every migration it knows.
 */

test("with MIGRATE=false a node waits for the last migration, then starts", async () => {
  const db = await createTestDatabase();
  const client = new Client({ connectionString: db.url });
  await client.connect();
  const last = migrations[migrations.length - 1].name;
  const warn = jest.spyOn(console, "warn").mockImplementation(() => undefined);
  let app: TestApp | undefined;
  try {
    // The job has not run the newest migration yet.
    await client.query("DELETE FROM schema_migrations WHERE name = $1", [last]);
    let started = false;
    const starting = startApp({
      services: ["workspaces"],
      databaseUrl: db.url,
      env: { MIGRATE: "false" },
    }).then((a) => {
      started = true;
      app = a;
    });
    await waitFor(
      () =>
        warn.mock.calls.some(([m]) =>
          String(m).startsWith(`Waiting for the schema: 1 migration(s) not applied yet, from ${last}`),
        ),
      10_000,
      "the node to say it waits for the schema",
    );
    expect(started).toBe(false);
    // What the job records when it has applied it (its statements already ran in the template).
    await client.query("INSERT INTO schema_migrations (name) VALUES ($1)", [last]);
    await starting;
    expect(app!.broker.getLocalService("workspaces")).toBeTruthy();
    const { rows } = await client.query("SELECT count(*)::int AS n FROM schema_migrations");
    expect(rows[0].n).toBe(migrations.length);
  } finally {
    warn.mockRestore();
    await app?.stop();
    await client.end();
    await db.drop();
  }
});
