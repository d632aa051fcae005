import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { Client } from "pg";
import { randomHex } from "../../../lib/crypto";
import { derivedMessageId } from "../../../services/campaigns/runner";
import { startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { ownerWithWorkspace } from "../../helpers/http";
import { dropStreams } from "../../helpers/nats";
import { waitFor } from "../../helpers/wait";

/**
 * Crash safety across replicas over NATS: node A runs every service but
 * campaigns (gateway, send path); node B, a child process, runs campaigns
 * and is killed with SIGKILL after its step's send was queued and before the
 * step was saved; node C, started afterwards, takes the step when B's lease
 * ends and finishes it without a second message.
 */

const NATS_URL = process.env.NATS_URL;
if (!NATS_URL) console.log("crash.test.ts: the crash-safety suite is skipped: NATS_URL is not set");
const suite = NATS_URL ? describe : describe.skip;
const ROOT = path.resolve(__dirname, "../../..");

suite("a campaigns replica killed mid-step over NATS", () => {
  const run = randomHex(4);
  const env = {
    NATS_URL,
    NAMESPACE: `crash-${run}`,
    CAMPAIGN_POLL_MS: "100",
    CAMPAIGN_LEASE_MS: "2000",
    MESSAGE_POLL_MS: "100",
  };
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: TestApp;
  let c: TestApp | undefined;
  let b: ChildProcess;
  let output = "";
  let sql: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    b = spawn(
      process.execPath,
      ["-r", "ts-node/register/transpile-only", "test/fixtures/frozen-campaigns-node.ts"],
      {
        cwd: ROOT,
        env: { ...process.env, ...env, DATABASE_URL: db.url, NODE_ID: `b-${run}`, LOG_LEVEL: "error" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    b.stdout!.on("data", (chunk) => (output += chunk));
    b.stderr!.on("data", (chunk) => (output += chunk));
    a = await startApp({
      env,
      databaseUrl: db.url,
      services: [
        "api",
        "auth",
        "workspaces",
        "contacts",
        "events",
        "segments",
        "templates",
        "messages",
        "jobs",
      ],
      broker: { nodeID: `a-${run}` },
      waitForServices: ["campaigns"],
    });
    await waitFor(async () => output.includes("started") || undefined, 60_000, "node B started");
    sql = new Client({ connectionString: db.url });
    await sql.connect();
  }, 90_000);

  afterAll(async () => {
    b?.kill("SIGKILL");
    await c?.stop();
    await a?.stop();
    await sql?.end();
    await db?.drop();
    await dropStreams(NATS_URL!, env.NAMESPACE);
  });

  test("B dies after queueing its send; C finishes the step when the lease ends, with the one message", async () => {
    const ctx = await ownerWithWorkspace(a.baseUrl);
    const client = ctx.owner.client;
    await client.patch(ctx.ws, { settings: { sender: { fromName: "Acme", fromEmail: "news@acme.test" } } });
    const template = await client.post(`${ctx.ws}/templates`, {
      name: "Hello",
      channel: "email",
      content: { subject: "Hello {{ contact.firstName }}", html: "<p>Hi</p>" },
    });
    const campaign = await client.post(`${ctx.ws}/campaigns`, {
      name: "Survives a crash",
      workflow: {
        nodes: [
          { id: "entry", type: "entry", config: {} },
          { id: "send", type: "send", config: { channel: "email", templateId: template.body.id } },
          { id: "w", type: "wait", config: { duration: "P1D" } },
        ],
        edges: [
          { from: "entry", to: "send" },
          { from: "send", to: "w" },
        ],
      },
    });
    expect(campaign.status).toBe(201);
    expect((await client.post(`${ctx.ws}/campaigns/${campaign.body.id}/execute`)).status).toBe(200);
    const who = (await client.post(`${ctx.ws}/contacts`, { email: "crash@example.com", firstName: "Cy" }))
      .body.id;
    const enrolled = await client.post(`${ctx.ws}/campaigns/${campaign.body.id}/enroll`, { contactId: who });
    expect(enrolled.status).toBe(201);

    // B took the step, queued the send on A, and froze before saving the step: kill it there.
    await waitFor(async () => output.includes("frozen") || undefined, 20_000, "node B queueing the send");
    b.kill("SIGKILL");
    const messageId = derivedMessageId(enrolled.body.id, "send");
    const step = async () =>
      (
        await sql.query(`SELECT status, current_node_id FROM campaign_enrollments WHERE id = $1`, [
          enrolled.body.id,
        ])
      ).rows[0];
    expect(await step()).toEqual({ status: "active", current_node_id: "send" });

    c = await startApp({
      env,
      databaseUrl: db.url,
      services: ["campaigns"],
      withoutGateway: true,
      broker: { nodeID: `c-${run}` },
      waitForServices: ["messages"],
    });
    expect(
      await waitFor(async () => ((await step()).status === "waiting" ? step() : undefined), 20_000),
    ).toEqual({
      status: "waiting",
      current_node_id: "w",
    });
    const messages = await sql.query(`SELECT id, status FROM messages WHERE campaign_id = $1`, [
      campaign.body.id,
    ]);
    expect(messages.rows.map((m) => m.id)).toEqual([messageId]);
    const logs = await sql.query(
      `SELECT detail FROM campaign_logs WHERE enrollment_id = $1 AND node_id = 'send'`,
      [enrolled.body.id],
    );
    expect(logs.rows).toEqual([{ detail: `message ${messageId} queued by an earlier try` }]);
    // The send path (on A) sends it once.
    await waitFor(
      async () =>
        (await sql.query(`SELECT status FROM messages WHERE id = $1`, [messageId])).rows[0]?.status ===
          "sent" || undefined,
      10_000,
    );
  }, 60_000);
});
