/**
 * Inbound chat messages through the signed chatapp1 webhook into the shared inbox (issue 31, Speed):
 * `POST /api/providers/chatapp1/webhooks?providerId=` with the secret header, each update filed in its
 * contact's thread with a round-robin assignment rule and an active auto-reply (whose `sendMessage` goes
 * to a fake Bot API in its own process). A share of the updates (BENCH_NEW_SHARE, 0.2) comes from chats never
 * seen: the first-message work (a new contact and thread, the assignment, its notification, the auto-reply sent);
 * the others continue one of BENCH_OPENED (200) conversations opened before the rounds (its open thread: the
 * assignee's notification, and no auto-reply, which answers once per thread and rule a day), as most messages of
 * a real inbox do.
 * `BENCH_NEW_SHARE=0.8` is near the mix measured before 2026-11-27 09:00 (four in five new; the fifth continued a
 * chat of the same round, often still in flight). Beside it, in the same run and
 * the same process, `POST {ws}/events` with the chain as `events.ts` `quiet` measures it (the reference),
 * interleaved round by round. Targets: rate ≥ 0.5 of the reference, p99 ≤ 100 ms.
 *
 * The webhook accepts an update durably and answers; the providers service files it (inbound_queue, migration
 * 0105). A round's rate therefore counts FILED messages: the inbound messages stored in threads (their rules run)
 * over the time from the round's start until the queue is drained. `p99ms` is the webhook's answer (the target's);
 * `filingP99ms` is from acceptance to filing, read from the queue rows' timestamps (`received_at`, `filed_at`).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/inbox.ts
 *
 * Env: BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (50), as in `events.ts`; BENCH_UPDATES (updates
 * prepared per round, 20000); BENCH_NEW_SHARE (0.2) and BENCH_OPENED (200), see above; BENCH_RULES (`assignment,auto-reply`: which of the two exist, to see what each costs);
 * BENCH_STATEMENTS=1 also prints the statements most run per inbound message.
 *
 * Statements and commits per inbound message are counted in this process (every area runs here): each query the
 * `pg` clients send during the inbox rounds, over the inbound messages those rounds stored. Commits are explicit
 * `COMMIT`s plus statements sent outside a transaction (each its own commit).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { QueryTypes } from "sequelize";
import { database } from "../lib/database";
import { startCounting, stopCounting, type StatementCount } from "./pg-statements";
import {
  bootApp,
  CONNECTIONS,
  median,
  ownerSession,
  ROUNDS,
  runLoad,
  SECONDS,
  type LoadResult,
  seedQuietWorkspace,
} from "./events";

const UPDATES = Number(process.env.BENCH_UPDATES ?? 20_000);
const NEW_SHARE = Number(process.env.BENCH_NEW_SHARE ?? 0.2);
const OPENED = Number(process.env.BENCH_OPENED ?? 200);
const TOKEN = "123456:bench-token-abcd";
const RULES = (process.env.BENCH_RULES ?? "assignment,auto-reply").split(",").filter(Boolean);

/** What the `pg` clients of this process sent during the inbox rounds: statements (by text), and commits. */
const sent: StatementCount = { statements: 0, commits: 0, byText: new Map() };

/** The Bot API (`/bot<token>/<method>`), answering what connecting and sending ask; `/stats` tells the secret and the sends. */
const BOT_API = `
const http = require("node:http");
let secret = "", sent = 0;
const ok = (res, result) => { res.writeHead(200, { "content-type": "application/json" }); res.end(JSON.stringify({ ok: true, result })); };
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    if (req.url === "/stats") return ok(res, { secret, sent });
    const method = (/^\\/bot[^/]+\\/(\\w+)$/.exec(req.url) || [])[1];
    const json = body ? JSON.parse(body) : {};
    switch (method) {
      case "getMe": return ok(res, { id: 42, is_bot: true, username: "bench_bot" });
      case "setWebhook": secret = json.secret_token; return ok(res, true);
      case "getWebhookInfo": return ok(res, { url: "", pending_update_count: 0 });
      case "setMyCommands": case "deleteWebhook": return ok(res, true);
      case "sendMessage": sent++; return ok(res, { message_id: sent, chat: { id: Number(json.chat_id) }, text: json.text });
      default: res.writeHead(404); res.end('{"ok":false,"error_code":404}');
    }
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

function botApi(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["-e", BOT_API], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout!.once("data", (chunk: Buffer) =>
      resolve({ url: `http://127.0.0.1:${chunk.toString().trim()}`, child }),
    );
  });
}

/** A text from a private chat, as Telegram posts it. */
function update(id: number, chatId: number): string {
  return JSON.stringify({
    update_id: id,
    message: {
      message_id: id,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: "private", first_name: "Ada", last_name: `Chat${chatId}` },
      from: { id: chatId, is_bot: false, first_name: "Ada" },
      text: "Hello, where is my order?",
    },
  });
}

/**
 * One round's updates: a NEW_SHARE of them from chats of their own (new contacts), the others from the OPENED
 * conversations opened before the rounds (chat ids 1..OPENED), in turn.
 */
function updates(round: number): string[] {
  const base = round * 10_000_000;
  return Array.from({ length: UPDATES }, (_, i) => {
    const fresh = Math.floor((i + 1) * NEW_SHARE) > Math.floor(i * NEW_SHARE);
    return update(base + i, fresh ? base + i : 1 + (i % OPENED));
  });
}

async function main() {
  const bot = await botApi();
  const app = await bootApp(
    [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "segments",
      "scoring",
      "campaigns",
      "events",
      "templates",
      "messages",
      "providers",
      "crm",
      "inbox",
    ],
    // The send queue's poll at its default (auto-replies go through `messages.sendNow`, not the queue): at 50 ms its
    // idle claims were 20 transactions a second, a share of each inbound message's round trips at these rates.
    { PUBLIC_URL: "https://cms.example.test" },
  );
  try {
    const { cookie, workspaceId } = await ownerSession(app.baseUrl);
    const ws = `${app.baseUrl}/api/workspaces/${workspaceId}`;
    const api = async <T = Record<string, unknown>>(method: string, route: string, body?: unknown) => {
      const res = await fetch(`${ws}${route}`, {
        method,
        headers: { "content-type": "application/json", cookie },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    const [owner] = await api<Array<{ userId: string }>>("GET", "/members");
    const provider = await api<{ id: string }>("POST", "/providers/chatapp1", {
      config: { botToken: TOKEN, baseUrl: bot.url },
    });
    const stats = async () =>
      ((await (await fetch(`${bot.url}/stats`)).json()) as { result: { secret: string; sent: number } })
        .result;
    const { secret } = await stats();
    if (RULES.includes("assignment"))
      await api("POST", "/inbox/assignment-rules", {
        name: "Everyone",
        type: "round_robin",
        priority: 1,
        config: { memberIds: [owner.userId] },
      });
    if (RULES.includes("auto-reply"))
      await api("POST", "/inbox/auto-replies", {
        name: "Ack",
        channel: "chatapp1",
        body: "Thanks, we will answer soon.",
      });

    // The reference: `events.ts` `quiet` (segments and a scoring rule, none about the posted event), 1,000 contacts.
    const eventBodies = await seedQuietWorkspace(workspaceId, 1000, (method, route, body) =>
      api(method, `/${route}`, body),
    );
    const sequelize = await database();
    const count = async (sql: string) =>
      Number((await sequelize.query<{ n: string }>(sql, { type: QueryTypes.SELECT }))[0].n);
    // The conversations the rounds continue: opened (and auto-answered, assigned) before them, ten at a time.
    const webhook = `${app.baseUrl}/api/providers/chatapp1/webhooks?providerId=${provider.id}`;
    for (let chat = 1; chat <= OPENED; chat += 10)
      await Promise.all(
        Array.from({ length: Math.min(10, OPENED - chat + 1) }, async (_, k) => {
          const res = await fetch(webhook, {
            method: "POST",
            headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
            body: update(chat + k, chat + k),
          });
          if (!res.ok) throw new Error(`opening chat ${chat + k}: ${res.status} ${await res.text()}`);
        }),
      );
    const UNFILED = `SELECT count(*) AS n FROM inbound_queue WHERE filed_at IS NULL AND failed_at IS NULL`;
    const unfiled = () => count(UNFILED);
    const drained = async () => {
      while ((await unfiled()) > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    await drained();

    console.log(
      `inbox bench: ${CONNECTIONS} connections, ${ROUNDS} rounds x ${SECONDS} s; ${NEW_SHARE} of the updates from new chats, the others continuing ${OPENED} conversations; rules: ${RULES.join(", ") || "none"}`,
    );
    const storedInbound = () => count(`SELECT count(*) AS n FROM inbox_messages WHERE direction = 'inbound'`);
    /** A round of the inbox: the load's answers, and the filed messages' rate and filing p99. */
    type InboxRound = LoadResult & { filedPerSec: number; filingP99ms: number };
    const inboxRuns: InboxRound[] = [];
    const eventRuns: LoadResult[] = [];
    let countedInbound = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const e = await runLoad({
        url: `${ws}/events`,
        method: "POST",
        headers: { cookie },
        bodies: eventBodies,
      });
      const before = await storedInbound();
      const lastQueued = await count(`SELECT coalesce(max(id), 0) AS n FROM inbound_queue`);
      startCounting();
      const startedAt = Date.now();
      const answers = await runLoad({
        url: webhook,
        method: "POST",
        headers: { "x-telegram-bot-api-secret-token": secret },
        bodies: updates(round),
      });
      await drained();
      const seconds = (Date.now() - startedAt) / 1000;
      const counted = stopCounting();
      // The bench's own polls of the queue (each a statement and a commit) are not the service's work.
      const polls = counted.byText.get(UNFILED) ?? 0;
      counted.byText.delete(UNFILED);
      counted.statements -= polls;
      counted.commits -= polls;
      const filed = (await storedInbound()) - before;
      const [{ p99 }] = await sequelize.query<{ p99: number }>(
        `SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM filed_at - received_at) * 1000) AS p99
           FROM inbound_queue WHERE id > $1 AND filed_at IS NOT NULL`,
        { type: QueryTypes.SELECT, bind: [lastQueued] },
      );
      const i: InboxRound = {
        ...answers,
        filedPerSec: Math.round(filed / seconds),
        filingP99ms: Math.round(Number(p99)),
      };
      sent.statements += counted.statements;
      sent.commits += counted.commits;
      for (const [text, n] of counted.byText) sent.byText.set(text, (sent.byText.get(text) ?? 0) + n);
      countedInbound += filed;
      eventRuns.push(e);
      inboxRuns.push(i);
      console.log(JSON.stringify({ round, events: e, inbox: i }));
    }
    const perMessage = (n: number) => +(n / Math.max(1, countedInbound)).toFixed(2);
    if (process.env.BENCH_STATEMENTS)
      for (const [text, n] of [...sent.byText].sort((a, b) => b[1] - a[1]).slice(0, 40))
        console.log(`${perMessage(n).toFixed(2).padStart(6)}  ${text}`);
    const threads = await count(`SELECT count(*) AS n FROM inbox_threads WHERE channel = 'chatapp1'`);
    const unassigned = await count(
      `SELECT count(*) AS n FROM inbox_threads WHERE channel = 'chatapp1' AND assignee_id IS NULL`,
    );
    const inbound = await storedInbound();
    const autoReplies = await sequelize.query<{ status: string; error: string | null; n: string }>(
      `SELECT status, min(error) AS error, count(*) AS n FROM inbox_messages WHERE direction = 'outbound' GROUP BY status`,
      { type: QueryTypes.SELECT },
    );
    const rate = median(inboxRuns.map((r) => r.filedPerSec));
    const reference = median(eventRuns.map((r) => r.rps));
    const p99 = median(inboxRuns.map((r) => r.p99));
    console.log(
      JSON.stringify({
        summary: "inbound chatapp1 webhook into threads with rules, beside POST {ws}/events (chain, quiet)",
        newChatShare: NEW_SHARE,
        inboundFiledPerSec: rate,
        webhookAnswersPerSec: median(inboxRuns.map((r) => r.rps)),
        p99ms: p99,
        filingP99ms: median(inboxRuns.map((r) => r.filingP99ms)),
        failed: inboxRuns.reduce((n, r) => n + r.failed, 0),
        statementsPerInbound: perMessage(sent.statements),
        commitsPerInbound: perMessage(sent.commits),
        eventsPerSec: reference,
        eventsP99ms: median(eventRuns.map((r) => r.p99)),
        ratio: +(rate / reference).toFixed(3),
        ratiosByRound: inboxRuns.map((r, k) => +(r.filedPerSec / eventRuns[k].rps).toFixed(3)),
        inboundStored: inbound,
        threads,
        unassignedThreads: unassigned,
        autoReplies,
        botApiSendMessages: (await stats()).sent,
        targets: "ratio >= 0.5, p99 <= 100 ms",
      }),
    );
  } finally {
    bot.child.kill();
    await app.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
