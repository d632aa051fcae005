import fs from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { parse } from "yaml";
import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";
import {
  NATS_SERVER_INSTALLED,
  freePort,
  pidOfClient,
  serviceOnNode,
  startNatsServer,
  startServiceNode,
  startTcpProxy,
  type NatsServer,
  type ServiceNode,
  type TcpProxy,
} from "../../helpers/processes";
import { waitFor } from "../../helpers/wait";
import { startReceiver, type Received } from "../../helpers/receiver";

/**
 * Faults across real processes. The gateway and the request-side services
 * run in this process; the workers of the durable queues run as production
 * runs them, moleculer-runner with SERVICES=<service>, each its own process:
 * three messages nodes, two campaigns nodes, two webhooks nodes. All share a
 * NATS server of the test's own (stopped and started again) and reach
 * PostgreSQL through a TCP proxy the test can cut. A Twilio-wire SMS fake
 * counts what each recipient received: Twilio takes our message id as the
 * idempotency token and sends a repeated token's message once, so the fake
 * does too and counts the repeated requests apart. Each test prints what was
 * sent, received and lost.
 */

if (!NATS_SERVER_INSTALLED)
  console.log("faults.test.ts: skipped: no nats-server binary (.ci/run installs Debian's)");

const run = randomHex(4);
const ROOT = path.resolve(__dirname, "../../..");
/** The grace period Kubernetes gives a messages pod to stop (k8s/services.yaml). */
const messagesGraceMs = (() => {
  const docs = fs
    .readFileSync(path.join(ROOT, "k8s/services.yaml"), "utf8")
    .split(/^---$/m)
    .map((doc) => parse(doc));
  const deployment = docs.find((d) => d?.kind === "Deployment" && d.metadata.name === "cms-messages");
  return deployment.spec.template.spec.terminationGracePeriodSeconds * 1000;
})();

/** A Twilio-wire fake: each request counted by recipient; a repeated idempotency token is one message. */
function smsFake() {
  const requests = new Map<string, number>();
  const delivered = new Map<string, number>();
  const tokens = new Set<string>();
  return {
    requests,
    delivered,
    answer(req: Received) {
      const to = new URLSearchParams(req.body).get("To") ?? "";
      const token = String(req.headers["i-twilio-idempotency-token"] ?? "");
      requests.set(to, (requests.get(to) ?? 0) + 1);
      if (!tokens.has(token)) {
        tokens.add(token);
        delivered.set(to, (delivered.get(to) ?? 0) + 1);
      }
      return { status: 201, body: JSON.stringify({ sid: `SM${token}`, num_segments: "1" }), afterMs: 150 };
    },
    /** Sent, received, lost and twice for these recipients. */
    tally(phones: string[]) {
      const received = phones.filter((p) => (delivered.get(p) ?? 0) > 0).length;
      return {
        sent: phones.length,
        received,
        lost: phones.length - received,
        twice: phones.filter((p) => (delivered.get(p) ?? 0) > 1).length,
        requests: phones.reduce((n, p) => n + (requests.get(p) ?? 0), 0),
      };
    },
  };
}

(NATS_SERVER_INSTALLED ? describe : describe.skip)("faults across real processes", () => {
  const namespace = `faults-${run}`;
  const sms = smsFake();
  const hooks: Received[] = [];
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let nats: NatsServer;
  let proxy: TcpProxy;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let sql: Client;
  let gateway: TestApp;
  let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
  let healthPort: number;
  let templateId: string;
  const nodes = new Map<string, ServiceNode>();
  /** Every node started, killed ones included (their output is printed with TEST_LOGS). */
  const started: ServiceNode[] = [];
  /** How the receiver answers webhook deliveries, by path. */
  let hookBehaviour: (req: Received) => { status: number } | "hang" = () => ({ status: 200 });
  let contactSeq = 0;

  const node = (name: string) => nodes.get(name)!;
  const c = () => ctx.owner.client;

  /** `n` contacts with a phone and SMS consent, imported in one CSV; answers their phones. */
  async function contacts(n: number): Promise<string[]> {
    const phones = Array.from(
      { length: n },
      () => `+1415${String(5_000_000 + contactSeq++).padStart(7, "0")}`,
    );
    const csv = ["email,phone,consent.sms", ...phones.map((p) => `${p.slice(1)}@faults.test,${p},opted_in`)];
    const res = await c().request("POST", `${ctx.ws}/contacts/import`, {
      raw: csv.join("\n"),
      headers: { "content-type": "text/csv" },
    });
    expect(res.status).toBe(202);
    expect((await finishedJob(c(), ctx.ws, res.body.jobId, 30_000)).result).toMatchObject({ created: n });
    return phones;
  }
  const contactIdsOf = async (phones: string[]) =>
    (await sql.query(`SELECT id FROM contacts WHERE phone = ANY($1)`, [phones])).rows.map((r) => r.id);
  const statuses = async (campaignId: string) =>
    Object.fromEntries(
      (
        await sql.query(`SELECT status, count(*)::int AS n FROM messages WHERE campaign_id = $1 GROUP BY 1`, [
          campaignId,
        ])
      ).rows.map((r) => [r.status, r.n]),
    );
  const allSent = (campaignId: string, n: number, ms = 90_000) =>
    waitFor(
      async () => (await statuses(campaignId)).sent === n,
      ms,
      `${n} messages of ${campaignId} sent`,
    ).catch(async (err) => {
      throw new Error(`${err.message}: ${JSON.stringify(await statuses(campaignId))}`);
    });
  /** The broadcast's messages taken again after a lease ran out (a claim counts an attempt). */
  const reclaimed = async (campaignId: string) =>
    (
      await sql.query(`SELECT count(*)::int AS n FROM messages WHERE campaign_id = $1 AND attempts > 1`, [
        campaignId,
      ])
    ).rows[0].n as number;
  async function broadcast(phones: string[]): Promise<string> {
    const res = await c().post(`${ctx.ws}/campaigns/broadcast`, {
      name: `Faults ${randomHex(3)}`,
      channel: "sms",
      templateId,
      contactIds: await contactIdsOf(phones),
    });
    expect(res.status).toBe(202);
    return res.body.campaignId;
  }
  /**
   * Kill a node with SIGKILL; answers once the gateway has noticed (its heartbeats missing: a node
   * that says no goodbye gets requests until then), printing how long that took. `atDeath` runs as soon
   * as the process is gone, before other nodes can have taken over what it held.
   */
  async function killHard(name: string, atDeath?: () => Promise<void>): Promise<void> {
    const n = node(name);
    n.kill("SIGKILL");
    await n.exited;
    await atDeath?.();
    nodes.delete(name);
    const killedAt = Date.now();
    await waitFor(() => !gateway.broker.registry.nodes.get(n.nodeID)?.available, 40_000, `${name} gone`, 100);
    console.log(`kill -9 ${name}: the gateway stopped routing to it after ${Date.now() - killedAt} ms`);
  }
  /** The node among `names` that sent the fake's latest request. */
  /** The node whose connection sent the latest request; the broadcast goes on, so a later one is asked when that connection has closed. */
  const latestSender = (names: string[]) =>
    waitFor(
      () => {
        const last = receiver.received.filter((r) => r.path.startsWith("/twilio")).at(-1)!;
        const pid = pidOfClient(
          last.clientPort,
          names.map((n) => node(n).pid),
        );
        return names.find((n) => node(n).pid === pid);
      },
      10_000,
      "a sender whose connection is still open",
    );

  beforeAll(async () => {
    receiver = await startReceiver((req) => {
      if (req.path.startsWith("/twilio")) return sms.answer(req);
      hooks.push(req);
      return hookBehaviour(req);
    });
    nats = await startNatsServer();
    db = await createTestDatabase();
    const direct = new URL(db.url);
    proxy = await startTcpProxy(Number(direct.port));
    const proxied = new URL(db.url);
    proxied.port = String(proxy.port);
    healthPort = await freePort();
    const env = {
      NATS_URL: nats.url,
      NAMESPACE: namespace,
      MIGRATE: "false",
      DATABASE_URL: proxied.toString(),
      MESSAGE_POLL_MS: "100",
      MESSAGE_BATCH: "30",
      MESSAGE_LEASE_MS: "3000",
      MESSAGE_RETRY_DELAYS_MS: "500,500,500",
      CAMPAIGN_POLL_MS: "100",
      CAMPAIGN_LEASE_MS: "3000",
      WEBHOOK_POLL_MS: "100",
      WEBHOOK_LEASE_MS: "3000",
      WEBHOOK_RETRY_DELAYS_MS: "200,200,200",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      OUTBOX_POLL_MS: "100",
      EVENT_CHAIN_RETRY_DELAYS_MS: "1000,2000",
    };
    const plan: Array<[string, string, Record<string, string>]> = [
      ["m1", "messages", {}],
      ["m2", "messages", {}],
      ["m3", "messages", {}],
      ["c1", "campaigns", {}],
      ["c2", "campaigns", { HEALTH_PORT: String(healthPort) }],
      ["w1", "webhooks", {}],
      ["w2", "webhooks", {}],
    ];
    for (const [name, services, own] of plan) {
      nodes.set(name, startServiceNode(`${name}-${run}`, services, { ...env, ...own }));
      started.push(nodes.get(name)!);
    }
    gateway = await startApp({
      env,
      databaseUrl: proxied.toString(),
      services: [
        "api",
        "auth",
        "workspaces",
        "contacts",
        "segments",
        "templates",
        "providers",
        "jobs",
        "events",
        "scoring",
      ],
      broker: { nodeID: `gateway-${run}`, transporter: nats.url },
    });
    for (const [name, services] of plan)
      await serviceOnNode(gateway.broker, `${name}-${run}`, services, 180_000).catch((err: Error) => {
        throw new Error(`${err.message}; the node's output ends: ${node(name).output().slice(-3000)}`);
      });
    sql = new Client({ connectionString: db.url });
    await sql.connect();
    ctx = await ownerWithWorkspace(gateway.baseUrl);
    // The gateway's routes to the workers' actions are built once it has seen their services.
    await waitFor(
      async () => (await c().get(`${ctx.ws}/campaigns`)).status === 200,
      15_000,
      "campaign routes",
    );
    const template = await c().post(`${ctx.ws}/templates`, {
      name: "Faults",
      channel: "sms",
      content: { body: "Hi from the fault tests" },
    });
    expect(template.status).toBe(201);
    templateId = template.body.id;
    const provider = await c().post(`${ctx.ws}/providers/sms`, {
      type: "smsapi1",
      config: {
        accountSid: "AC1",
        authToken: "token",
        from: "+15550001111",
        baseUrl: receiver.url("/twilio"),
      },
    });
    expect(provider.status).toBe(201);
  }, 300_000);

  afterAll(async () => {
    if (process.env.TEST_LOGS) for (const n of started) console.log(`${n.nodeID}:\n${n.output()}`);
    for (const n of nodes.values()) n.kill("SIGKILL");
    await Promise.all([...nodes.values()].map((n) => n.exited));
    await gateway?.stop();
    await sql?.end();
    await db?.drop();
    await nats?.close();
    await proxy?.close();
    await receiver?.close();
  }, 120_000);

  test("kill -9 of a messages worker mid-broadcast: another node sends the rest, each recipient once", async () => {
    const phones = await contacts(300);
    const campaignId = await broadcast(phones);
    // Mid-broadcast: a worker that has sent some of the sends it holds.
    await waitFor(() => sms.tally(phones).received >= 60, 30_000, "the first sends");
    const victim = await latestSender(["m1", "m2", "m3"]);
    expect(victim).toBeDefined();
    await killHard(victim);
    await allSent(campaignId, phones.length);
    const tally = sms.tally(phones);
    const taken = await reclaimed(campaignId);
    console.log(
      `kill -9 ${victim} mid-broadcast: sent ${tally.sent}, received ${tally.received}, lost ${tally.lost}, twice ${tally.twice}; ` +
        `${taken} sends taken over after the lease, ${tally.requests - tally.received} repeated requests with the same idempotency token`,
    );
    expect(tally).toMatchObject({ received: phones.length, lost: 0, twice: 0 });
    // The killed worker held sends: another node took them over when their lease ended.
    expect(taken).toBeGreaterThan(0);
  }, 120_000);

  test("SIGTERM to a messages worker mid-broadcast: it finishes what it holds and exits within the grace period", async () => {
    const phones = await contacts(300);
    const campaignId = await broadcast(phones);
    const workers = [...nodes.keys()].filter((n) => n.startsWith("m"));
    await waitFor(() => sms.tally(phones).received >= 60, 30_000, "the first sends");
    const victim = await latestSender(workers);
    const signalled = Date.now();
    node(victim).kill("SIGTERM");
    const exit = await node(victim).exited;
    const tookMs = Date.now() - signalled;
    await allSent(campaignId, phones.length);
    const tally = sms.tally(phones);
    const taken = await reclaimed(campaignId);
    console.log(
      `SIGTERM ${victim} mid-broadcast: exited ${exit.code ?? exit.signal} in ${tookMs} ms (grace ${messagesGraceMs} ms); ` +
        `sent ${tally.sent}, received ${tally.received}, lost ${tally.lost}, twice ${tally.twice}, ${taken} taken over after a lease`,
    );
    expect(exit).toEqual({ code: 0, signal: null });
    expect(tookMs).toBeLessThan(messagesGraceMs);
    expect(tally).toMatchObject({ received: phones.length, lost: 0, twice: 0 });
    // Nothing it held waited for a lease to end: it sent and recorded it, or handed it back, before exiting.
    expect(taken).toBe(0);
    expect(tally.requests).toBe(phones.length);
    nodes.delete(victim);
  }, 120_000);

  test("kill -9 of a campaigns node mid-step: the other one finishes every step, each recipient messaged once", async () => {
    // More than two passes' worth (PASS_SIZE, 100), so each campaigns node claims a pass of steps.
    const phones = await contacts(250);
    const campaign = await c().post(`${ctx.ws}/campaigns`, {
      name: `Steps ${run}`,
      workflow: {
        nodes: [
          { id: "entry", type: "entry", config: {} },
          { id: "send", type: "send", config: { channel: "sms", templateId } },
          { id: "w", type: "wait", config: { duration: "P1D" } },
        ],
        edges: [
          { from: "entry", to: "send" },
          { from: "send", to: "w" },
        ],
      },
    });
    expect(campaign.status).toBe(201);
    const campaignId = campaign.body.id;
    expect((await c().post(`${ctx.ws}/campaigns/${campaignId}/execute`)).status).toBe(200);
    const contactIds = await contactIdsOf(phones);
    // The messages nodes paused, each campaigns node's pass waits on its first step's send: c1 is killed
    // holding claimed steps it cannot have saved (a pass saves its steps together at its end).
    const messagesNodes = ["m1", "m2", "m3"].filter((name) => nodes.has(name));
    const resumeMessages = () => messagesNodes.forEach((name) => node(name).kill("SIGCONT"));
    const heldBy = (nodeName: string) =>
      sql
        .query(
          `SELECT id FROM campaign_enrollments WHERE campaign_id = $1 AND claimed_by = $2 AND status = 'active'`,
          [campaignId, `${nodeName}-${run}`],
        )
        .then((r) => r.rows.map((row) => row.id as string));
    let held: string[] = [];
    messagesNodes.forEach((name) => node(name).kill("SIGSTOP"));
    try {
      const enrolled = await c().post(`${ctx.ws}/campaigns/${campaignId}/batch`, { contactIds });
      expect(enrolled.status).toBeLessThan(300);
      await waitFor(async () => (await heldBy("c1")).length > 0, 10_000, "c1 holding steps");
      await killHard("c1", async () => {
        held = await heldBy("c1");
        resumeMessages();
      });
    } finally {
      resumeMessages();
    }
    const waiting = () =>
      sql
        .query(
          `SELECT count(*)::int AS n FROM campaign_enrollments WHERE campaign_id = $1 AND status = 'waiting' AND current_node_id = 'w'`,
          [campaignId],
        )
        .then((r) => r.rows[0].n as number);
    await waitFor(
      async () => (await waiting()) === phones.length,
      90_000,
      "every enrollment at the wait",
    ).catch(async (err) => {
      const where = await sql.query(
        `SELECT status, current_node_id, count(*)::int AS n FROM campaign_enrollments WHERE campaign_id = $1 GROUP BY 1, 2`,
        [campaignId],
      );
      throw new Error(
        `${err.message}: ${JSON.stringify(where.rows)}, messages ${JSON.stringify(await statuses(campaignId))}`,
      );
    });
    await allSent(campaignId, phones.length);
    const again = (
      await sql.query(
        `SELECT count(*)::int AS n FROM campaign_logs WHERE campaign_id = $1 AND detail LIKE '%queued by an earlier try'`,
        [campaignId],
      )
    ).rows[0].n;
    const takenOver = (
      await sql.query(
        `SELECT count(*)::int AS n FROM campaign_enrollments
          WHERE id = ANY($1) AND claimed_by = $2 AND status = 'waiting' AND current_node_id = 'w'`,
        [held, `c2-${run}`],
      )
    ).rows[0].n;
    const tally = sms.tally(phones);
    console.log(
      `kill -9 c1 mid-step: enrolled ${phones.length}, held by c1 at its death ${held.length}, taken over by c2 ${takenOver}, ` +
        `at the wait ${await waiting()}; sent ${tally.sent}, received ${tally.received}, lost ${tally.lost}, ` +
        `twice ${tally.twice}; ${again} steps found their message queued by an earlier try`,
    );
    expect(held.length).toBeGreaterThan(0);
    expect(takenOver).toBe(held.length);
    expect(tally).toMatchObject({ received: phones.length, lost: 0, twice: 0 });
  }, 180_000);

  test("kill -9 of a webhooks worker mid-retry: the delivery completes once, from the other node", async () => {
    const hook = await c().post(`${ctx.ws}/webhooks`, {
      name: "retry",
      url: receiver.url("/retry"),
      events: ["fault_retry"],
    });
    expect(hook.status).toBe(201);
    const workers = ["w1", "w2"];
    const pids = workers.map((w) => node(w).pid);
    /** Which node sent a request, looked up while its connection is open. */
    const senderOf = (req: Received) => workers[pids.indexOf(pidOfClient(req.clientPort, pids) ?? 0)];
    let held: Received | undefined;
    let victim: string | undefined;
    const answeredBy: Array<string | undefined> = [];
    hookBehaviour = (req) => {
      if (req.path !== "/retry") return { status: 200 };
      if (req.headers["x-webhook-attempt"] === "1") return { status: 500 };
      if (!held) {
        held = req;
        victim = senderOf(req);
        return "hang";
      }
      answeredBy.push(senderOf(req));
      return { status: 200 };
    };
    const [contactId] = await contactIdsOf(await contacts(1));
    const event = await c().post(`${ctx.ws}/events`, { type: "fault_retry", contactId });
    expect(event.status).toBe(201);
    const retry = await waitFor(() => held, 30_000, "the retry in flight");
    expect(victim).toBeDefined();
    await killHard(victim!);
    const deliveryId = retry.headers["x-webhook-delivery"];
    const delivered = await waitFor(
      async () => {
        const row = (
          await sql.query(`SELECT success, attempt FROM webhook_deliveries WHERE id = $1`, [deliveryId])
        ).rows[0];
        return row?.success ? row : undefined;
      },
      30_000,
      "the delivery completed",
    );
    const attempts = hooks.filter((r) => r.headers["x-webhook-delivery"] === deliveryId);
    const answered = attempts.filter((r) => r !== retry && r.headers["x-webhook-attempt"] !== "1");
    const survivor = workers.find((w) => w !== victim)!;
    console.log(
      `kill -9 ${victim} mid-retry: ${attempts.length} attempts (1 failed, 1 cut by the kill, ${answered.length} answered 2xx), ` +
        `delivered at attempt ${delivered.attempt}`,
    );
    expect(answered).toHaveLength(1);
    expect(answeredBy).toEqual([survivor]);
  }, 90_000);

  /** Every worker node answers a call through NATS (its `$node` service). */
  const workersAnswer = () =>
    Promise.all(
      [...nodes.values()].map((n) =>
        waitFor(
          () =>
            gateway.broker.call("$node.health", {}, { nodeID: n.nodeID, timeout: 2000 }).then(
              () => true,
              () => false,
            ),
          60_000,
          `${n.nodeID} answering`,
        ),
      ),
    );

  test("NATS stopped for 20 s under ingest and an import: every accepted event and new contact recorded and fanned out once; the nodes reconnect", async () => {
    hookBehaviour = () => ({ status: 200 });
    const hook = await c().post(`${ctx.ws}/webhooks`, {
      name: "ingest",
      url: receiver.url("/ingest"),
      events: ["fault_ingest"],
    });
    expect(hook.status).toBe(201);
    const createdHook = await c().post(`${ctx.ws}/webhooks`, {
      name: "created",
      url: receiver.url("/created"),
      events: ["contact.created"],
    });
    expect(createdHook.status).toBe(201);
    const [contactId] = await contactIdsOf(await contacts(1));
    const accepted: string[] = [];
    let refused = 0;
    let ingesting = true;
    // At most MAX_INGEST events: the gateway, the receiver and these loops share the test's process, and a
    // receiver starved by an endless ingest answers late, which is a retry, not a fault.
    const MAX_INGEST = 1_500;
    const BACKLOG = 1_000;
    const ingest = async () => {
      while (ingesting && accepted.length < MAX_INGEST) {
        const res = await c()
          .post(`${ctx.ws}/events`, { type: "fault_ingest", contactId })
          .catch(() => undefined);
        if (res && res.status >= 200 && res.status < 300) accepted.push(res.body.id);
        else refused += 1;
      }
    };
    const loops = Array.from({ length: 4 }, ingest);
    await waitFor(() => accepted.length >= 50, 30_000, "ingest under way");
    await nats.stop();
    const stoppedAt = Date.now();
    const before = accepted.length;
    // A backlog larger than the ingest's: an import on the gateway's node (contacts and jobs run there) stages
    // a `contact.created` fact for each contact while no relay can send one.
    const imported = await contactIdsOf(await contacts(BACKLOG));
    await waitFor(() => Date.now() - stoppedAt >= 20_000, 25_000, "20 s of NATS down", 250);
    const during = accepted.length - before;
    const backlog = (await sql.query(`SELECT count(*)::int AS n FROM domain_event_outbox`)).rows[0]
      .n as number;
    // Events stored once the gateway had dropped the campaigns nodes: their chains wait, queued (503 answered).
    const chainsLeft = async () =>
      (await sql.query(`SELECT count(*)::int AS n FROM event_chain_retries`)).rows[0].n as number;
    const chainsQueued = await chainsLeft();
    await nats.start();
    const restartedAt = Date.now();
    await workersAnswer();
    const restarted = accepted.length;
    await waitFor(
      () => accepted.length >= Math.min(restarted + 50, MAX_INGEST),
      30_000,
      "ingest after the restart",
    );
    ingesting = false;
    await Promise.all(loops);

    const recorded = (await sql.query(`SELECT count(*)::int AS n FROM events WHERE id = ANY($1)`, [accepted]))
      .rows[0].n as number;
    /**
     * Each fact's distinct deliveries received on `path` (`X-Webhook-Delivery`), by the id `idOf` reads from
     * its payload's data: a delivery sent again after an answer came too late is the same delivery (at least
     * once, receivers dedupe on its id); two deliveries of one fact would be the fact fanned out twice.
     */
    const fannedOut = (path: string, idOf: (data: Record<string, string>) => string) => {
      const seen = new Map<string, Set<string>>();
      for (const r of hooks.filter((h) => h.path === path)) {
        const id = idOf(JSON.parse(r.body).data);
        seen.set(id, (seen.get(id) ?? new Set()).add(String(r.headers["x-webhook-delivery"])));
      }
      return seen;
    };
    const ingested = () => fannedOut("/ingest", (data) => data.eventId);
    const created = () => fannedOut("/created", (data) => data.contactId);
    await waitFor(
      () => accepted.every((id) => ingested().has(id)) && imported.every((id) => created().has(id)),
      180_000,
      "every accepted event and imported contact delivered",
      250,
    ).catch(() => undefined);
    const drainedS = ((Date.now() - restartedAt) / 1000).toFixed(1);
    await waitFor(async () => (await chainsLeft()) === 0, 60_000, "the queued chains to complete").catch(
      () => undefined,
    );
    const tally = (ids: string[], seen: Map<string, Set<string>>) => ({
      lost: ids.filter((id) => !seen.has(id)).length,
      twice: ids.filter((id) => (seen.get(id)?.size ?? 0) > 1).length,
    });
    const events = tally(accepted, ingested());
    const contactsCreated = tally(imported, created());
    console.log(
      `NATS down 20 s under ingest: accepted ${accepted.length} (${during} while down), refused ${refused}; ` +
        `recorded ${recorded}; ${imported.length} contacts imported while down; ${backlog} facts in the outbox at the restart; ` +
        `all delivered ${drainedS} s after the restart (${hooks.length} requests received in all, repeats of one delivery included); ` +
        `${chainsQueued} chains queued while down, ${await chainsLeft()} left after; ` +
        `events lost ${events.lost}, twice ${events.twice}; ` +
        `contact.created lost ${contactsCreated.lost}, twice ${contactsCreated.twice}`,
    );
    expect({ recorded, events, contactsCreated }).toEqual({
      recorded: accepted.length,
      events: { lost: 0, twice: 0 },
      contactsCreated: { lost: 0, twice: 0 },
    });
    expect(backlog).toBeGreaterThanOrEqual(BACKLOG);
    expect(await chainsLeft()).toBe(0);
    expect([...nodes.values()].every((n) => n.running())).toBe(true);
  }, 330_000);

  test("PostgreSQL unreachable for 20 s: 503 while down, then recovery without a restart", async () => {
    const pids = [...nodes.values()].map((n) => n.pid);
    const ready = async () => (await fetch(`http://127.0.0.1:${healthPort}/ready`)).status;
    await proxy.cut();
    const cutAt = Date.now();
    const answers = new Map<number, number>();
    const readiness = new Map<number, number>();
    await waitFor(
      async () => {
        const status = (await c().get(`${ctx.ws}/contacts`)).status;
        answers.set(status, (answers.get(status) ?? 0) + 1);
        const probe = await ready();
        readiness.set(probe, (readiness.get(probe) ?? 0) + 1);
        return Date.now() - cutAt >= 20_000;
      },
      30_000,
      "20 s of PostgreSQL away",
      250,
    );
    await proxy.restore();
    const restoredAt = Date.now();
    await waitFor(
      async () => (await c().get(`${ctx.ws}/contacts`)).status === 200,
      30_000,
      "the gateway back",
    );
    await waitFor(async () => (await ready()) === 200, 30_000, "the worker ready again");
    const backMs = Date.now() - restoredAt;
    // The workers work again: a broadcast goes out.
    const phones = await contacts(5);
    await allSent(await broadcast(phones), phones.length, 30_000);
    const tally = sms.tally(phones);
    console.log(
      `PostgreSQL away 20 s: answers ${JSON.stringify(Object.fromEntries(answers))}, worker /ready ${JSON.stringify(
        Object.fromEntries(readiness),
      )}; back in ${backMs} ms; then sent ${tally.sent}, received ${tally.received}, lost ${tally.lost}`,
    );
    expect([...answers.keys()]).toEqual([503]);
    expect([...readiness.keys()]).toEqual([503]);
    expect(tally).toMatchObject({ received: phones.length, lost: 0, twice: 0 });
    expect([...nodes.values()].map((n) => (n.running() ? n.pid : 0))).toEqual(pids);
  }, 120_000);
});
