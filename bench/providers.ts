/**
 * Provider clients against local fakes, each fake in its own process: one
 * message per request through `emailapi1` (SendGrid wire, keep-alive), and
 * SMTP through the pooled transport to a local `smtp-server`. Beside each
 * figure, the fake's bare rate in the same run: plain keep-alive undici
 * requests to the HTTP fake, and nodemailer's pool sending a bare text mail
 * to the SMTP one. Batched sends: 1,000 personalizations per request,
 * each with its own holes, through `emailapi1` and through `emailapi2`
 * (Mailgun recipient variables). Targets: emailapi1 ≥ 2,500 messages/s, batched
 * ≥ 20,000/s, SMTP ≥ 1,000/s.
 *
 *   npx ts-node --transpile-only bench/providers.ts
 *
 * Env: BENCH_MESSAGES (20000), BENCH_CONCURRENCY (50 sends in flight), BENCH_SMTP_CONNECTIONS (10).
 */
import { spawn, type ChildProcess } from "node:child_process";
import nodemailer from "nodemailer";
import { Agent, request } from "undici";
import { closeHttp } from "../services/providers/clients";
import { emailapi1Client } from "../services/providers/emailapi1/client";
import { emailapi2Client } from "../services/providers/emailapi2/client";
import { smtpClient } from "../services/providers/smtp/client";
import { skeletonOf } from "../services/providers/clients/batch";
import type { BatchSend, Outgoing } from "../services/providers/clients/types";

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const SMTP_CONNECTIONS = Number(process.env.BENCH_SMTP_CONNECTIONS ?? 10);

const HTTP_FAKE = `
const http = require("node:http");
let n = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    n += 1;
    // The Mailgun wire answers 200 with the id in JSON; SendGrid's 202 with a header.
    if (req.url.endsWith("/messages")) {
      const body = JSON.stringify({ id: "<mg-" + n + "@bench.test>", message: "Queued. Thank you." });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    } else {
      res.writeHead(202, { "x-message-id": "sg-" + n, "content-length": "0" });
      res.end();
    }
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

const SMTP_FAKE = `
const { SMTPServer } = require(${JSON.stringify(require.resolve("smtp-server"))});
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS", "AUTH"],
  logger: false,
  size: 10 * 1024 * 1024,
  maxClients: 1000,
  onData(stream, _session, callback) {
    stream.on("data", () => {});
    stream.on("end", () => callback());
  },
});
server.listen(0, "127.0.0.1", () => console.log(server.server.address().port));
`;

/** A fake in its own process, so it does not take the bench's core; answers its port. */
function fake(source: string): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, ["-e", source], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout!.once("data", (chunk: Buffer) => resolve({ port: Number(chunk.toString().trim()), child }));
  });
}

/** `n` calls of `one`, `concurrency` at once; answers the rate per second. */
async function rate(n: number, concurrency: number, one: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await one(next++);
    }),
  );
  return Math.round(n / (Number(process.hrtime.bigint() - t0) / 1e9));
}

const HTML = `<html><body><p>Hello Ana,</p><p>${"Our news of the week. ".repeat(40)}</p><a href="https://example.com/x">Read</a></body></html>`;

const message = (i: number): Outgoing => ({
  messageId: `bench-${i}`,
  channel: "email",
  to: `user${i}@example.test`,
  content: { subject: `News ${i}`, html: HTML, text: HTML.replace(/<[^>]+>/g, " ") },
  from: { email: "news@acme.test", name: "Acme" },
  replyTo: null,
  headers: {
    "List-Unsubscribe": `<https://cms.example.test/api/unsubscribe?token=t${i}>`,
    "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
  },
});

async function main() {
  const http = await fake(HTTP_FAKE);
  const smtp = await fake(SMTP_FAKE);
  try {
    console.log(`providers bench: ${MESSAGES} messages, ${CONCURRENCY} in flight`);

    const bareAgent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
    const bareUrl = `http://127.0.0.1:${http.port}/v3/mail/send`;
    const bareBody = JSON.stringify(message(0));
    const bare = async () => {
      const res = await request(bareUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: bareBody,
        dispatcher: bareAgent,
      });
      await res.body.dump();
    };
    await rate(2000, CONCURRENCY, bare); // warm-up
    const bareHttp = await rate(MESSAGES, CONCURRENCY, bare);
    await bareAgent.close();

    const sendgrid = emailapi1Client("bench", {
      apiKey: "SG.bench",
      baseUrl: `http://127.0.0.1:${http.port}`,
    });
    await rate(2000, CONCURRENCY, (i) => sendgrid.send(message(i)));
    const emailapi1 = await rate(MESSAGES, CONCURRENCY, (i) => sendgrid.send(message(i)));
    console.log(
      JSON.stringify({ client: "emailapi1", messagesPerSec: emailapi1, fakeBareRequestsPerSec: bareHttp }),
    );

    // Batched: 1,000 personalizations per request, each with its own holes in the shared body.
    const source = `<html><body><p>Hello {{ contact.firstName }},</p><p>${"Our news of the week. ".repeat(40)}</p><a href="https://example.com/x?c={{ contact.id }}">Read</a></body></html>`;
    const literals = skeletonOf(source, true)!;
    const batchOf = (start: number, size: number): BatchSend => ({
      from: { email: "news@acme.test", name: "Acme" },
      replyTo: null,
      html: literals,
      text: null,
      recipients: Array.from({ length: size }, (_, j) => ({
        message: message(start + j),
        html: [
          "",
          `Name${start + j}`,
          `https://t.example.test/m/${start + j}`,
          `<img src="https://t.example.test/p/${start + j}">`,
        ],
        text: null,
      })),
    });
    const PER_REQUEST = 1000;
    const requests = Math.max(1, Math.floor((MESSAGES * 5) / PER_REQUEST));
    // The fake's bare rate for requests of a batch's size: undici posting the batch's recipients as JSON.
    const bigAgent = new Agent({ connections: 4, keepAliveTimeout: 30_000 });
    const bigBody = JSON.stringify(batchOf(0, PER_REQUEST).recipients);
    const bareBig = () =>
      request(bareUrl, { method: "POST", body: bigBody, dispatcher: bigAgent }).then((res) =>
        res.body.dump(),
      );
    await rate(20, 4, bareBig);
    const bareBatchRequestsPerSec = await rate(requests, 4, bareBig);
    await bigAgent.close();
    await sendgrid.sendBatch!(batchOf(0, PER_REQUEST));
    const requestsPerSec = await rate(requests, 4, (i) =>
      sendgrid.sendBatch!(batchOf(i * PER_REQUEST, PER_REQUEST)),
    );
    console.log(
      JSON.stringify({
        client: "emailapi1 batched",
        recipientsPerRequest: PER_REQUEST,
        messagesPerSec: requestsPerSec * PER_REQUEST,
        requestsPerSec,
        fakeBareRequestsPerSec: bareBatchRequestsPerSec,
      }),
    );

    const mailgun = emailapi2Client("bench", {
      apiKey: "key-bench",
      domain: "mg.bench.test",
      baseUrl: `http://127.0.0.1:${http.port}`,
    });
    await mailgun.sendBatch!(batchOf(0, PER_REQUEST));
    const mailgunRequestsPerSec = await rate(requests, 4, (i) =>
      mailgun.sendBatch!(batchOf(i * PER_REQUEST, PER_REQUEST)),
    );
    console.log(
      JSON.stringify({
        client: "emailapi2 batched",
        recipientsPerRequest: PER_REQUEST,
        messagesPerSec: mailgunRequestsPerSec * PER_REQUEST,
        requestsPerSec: mailgunRequestsPerSec,
        fakeBareRequestsPerSec: bareBatchRequestsPerSec,
      }),
    );

    const smtpMessages = Math.min(MESSAGES, 10_000);
    const bareTransport = nodemailer.createTransport({
      pool: true,
      host: "127.0.0.1",
      port: smtp.port,
      secure: false,
      maxConnections: SMTP_CONNECTIONS,
      maxMessages: 1000,
    });
    const bareSmtp = await rate(smtpMessages, CONCURRENCY, (i) =>
      bareTransport.sendMail({ from: "a@acme.test", to: `u${i}@example.test`, subject: "x", text: "x" }),
    );
    bareTransport.close();
    const pooled = smtpClient("bench", {
      host: "127.0.0.1",
      port: smtp.port,
      secure: false,
      maxConnections: SMTP_CONNECTIONS,
      maxMessages: 1000,
    });
    const smtpRate = await rate(smtpMessages, CONCURRENCY, (i) => pooled.send(message(i)));
    await pooled.close?.();
    console.log(
      JSON.stringify({
        client: "smtp",
        messages: smtpMessages,
        connections: SMTP_CONNECTIONS,
        messagesPerSec: smtpRate,
        bareTextMailsPerSec: bareSmtp,
      }),
    );
  } finally {
    await closeHttp();
    http.child.kill();
    smtp.child.kill();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
