import { Client } from "pg";
import { waitFor } from "../../helpers/wait";
import { newId } from "../../../lib/crypto";
import { startApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * A node that is told to stop (a rolling restart, SIGTERM) finishes the
 * events it has accepted: the request answers 201 and the event, its score
 * and its chain are all stored, although the stop began mid-chain.
 */
test("an event in flight when the broker stops is answered and fully recorded", async () => {
  const db = await createTestDatabase();
  const app = await startApp({
    databaseUrl: db.url,
    services: ["api", "auth", "workspaces", "segments", "scoring", "events", "webhooks"],
  });
  const ctx = await ownerWithWorkspace(app.baseUrl);
  const sql = new Client({ connectionString: db.url });
  await sql.connect();
  try {
    const contactId = newId();
    await sql.query(`INSERT INTO contacts (id, workspace_id, email) VALUES ($1, $2, 'stop@example.test')`, [
      contactId,
      ctx.workspaceId,
    ]);
    expect(
      (await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, { name: "Buy", eventType: "buy", points: 7 }))
        .status,
    ).toBe(201);

    // Hold the contact's row: the event's score step waits for it, mid-chain.
    await sql.query("BEGIN");
    await sql.query("SELECT 1 FROM contacts WHERE id = $1 FOR UPDATE", [contactId]);
    const posted = ctx.owner.client.post(`${ctx.ws}/events`, { type: "buy", contactId });
    const watcher = new Client({ connectionString: db.url });
    await watcher.connect();
    await waitFor(
      async () =>
        (
          await watcher.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
        ).rowCount,
      10_000,
      "the score step to wait on the contact",
    );
    await watcher.end();

    const stopping = app.broker.stop();
    while (!app.broker.stopping) await new Promise((r) => setImmediate(r));
    await sql.query("ROLLBACK");

    const answer = await posted;
    expect(answer.status).toBe(201);
    await stopping;
    const stored = await sql.query(`SELECT score FROM contacts WHERE id = $1`, [contactId]);
    expect(stored.rows[0].score).toBe(7);
    const events = await sql.query(`SELECT id FROM events WHERE contact_id = $1`, [contactId]);
    expect(events.rows.map((r) => r.id)).toEqual([answer.body.id]);
  } finally {
    await sql.end();
    if (app.broker.started) await app.broker.stop();
    await db.drop();
  }
});
