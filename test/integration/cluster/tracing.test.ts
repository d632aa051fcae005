import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import type { BrokerOptions, Middleware } from "moleculer";
import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { dropStreams } from "../../helpers/nats";
import { HttpClient, signUp } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * A request through two brokers over NATS: A runs only the gateway, B auth
 * and workspaces. Both log through the configured Pino logger into memory,
 * and both export spans to a Zipkin fake on 127.0.0.1 (TRACING_EXPORTER).
 * The request id the caller sends is answered, is on the lines each node
 * logs for it, and is the trace of the spans both nodes export, the ones of
 * the event B broadcasts to A included: A announces its services (its event
 * handlers) before its start resolves, not a second later, so B's
 * broadcasts reach it from its first requests on (lib/announce-services.ts).
 */

const NATS_URL = process.env.NATS_URL;
if (!NATS_URL) console.log("tracing.test.ts: skipped: NATS_URL is not set (two brokers need a transporter)");
const suite = NATS_URL ? describe : describe.skip;

interface LogLine {
  msg: string;
  requestId?: string;
  level: number;
}
interface Packet {
  type: string;
  target: string | null;
  payload: { services?: Array<{ name: string }> };
}
interface ZipkinSpan {
  traceId: string;
  name: string;
  localEndpoint: { serviceName: string | null };
  tags: Record<string, string>;
}

/** A node's log lines, as the configured Pino logger writes them, in memory. */
function captureLog(lines: LogLine[]): Writable {
  let partial = "";
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = partial + chunk.toString("utf8");
      const parts = text.split("\n");
      partial = parts.pop() ?? "";
      for (const part of parts) if (part) lines.push(JSON.parse(part) as LogLine);
      done();
    },
  });
}

/** The configured logger (lib/request-id.ts's mixin included) at `info`, writing to `destination`. */
function loggerInto(destination: Writable): BrokerOptions["logger"] {
  const { brokerConfig } = require("../../../moleculer.config") as typeof import("../../../moleculer.config");
  const base = brokerConfig().logger as { type: string; options: { pino: { options: object } } };
  const pino = { options: { ...base.options.pino.options, level: "info" }, destination };
  return { ...base, options: { ...base.options, level: "info", pino } };
}

suite("request ids and traces across two nodes over NATS", () => {
  const run = randomHex(4);
  const namespace = `tracing-${run}`;
  const gatewayLines: LogLine[] = [];
  const workerLines: LogLine[] = [];
  const spans: ZipkinSpan[] = [];
  let zipkin: http.Server;
  let a: TestApp;
  let b: TestApp;
  /** The services listed in each INFO packet A broadcast to its peers. */
  const announced: string[][] = [];
  const recordAnnouncements = {
    transitPublish:
      (next: (packet: Packet) => Promise<void>) =>
      (packet: Packet): Promise<void> => {
        if (packet.type === "INFO" && !packet.target)
          announced.push((packet.payload.services ?? []).map((s) => s.name));
        return next(packet);
      },
  } as unknown as Middleware;
  let announcedAtStart: string[][] = [];

  beforeAll(async () => {
    zipkin = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        if (req.method === "POST" && req.url === "/api/v2/spans")
          spans.push(...(JSON.parse(body) as ZipkinSpan[]));
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((resolve) => zipkin.listen(0, "127.0.0.1", resolve));
    const env = {
      NATS_URL,
      NAMESPACE: namespace,
      TRACING_EXPORTER: "zipkin",
      TRACING_URL: `http://127.0.0.1:${(zipkin.address() as AddressInfo).port}`,
      TRACING_INTERVAL_SECONDS: "1",
    };
    b = await startApp({
      env,
      services: ["auth", "workspaces"],
      withoutGateway: true,
      broker: { nodeID: `worker-${run}`, transporter: NATS_URL, logger: loggerInto(captureLog(workerLines)) },
    });
    a = await startApp({
      env,
      services: ["api"],
      databaseUrl: b.databaseUrl,
      broker: {
        nodeID: `gateway-${run}`,
        transporter: NATS_URL,
        logger: loggerInto(captureLog(gatewayLines)),
      },
      waitForServices: ["auth", "workspaces"],
      middlewares: [recordAnnouncements],
    });
    announcedAtStart = [...announced];
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await new Promise((resolve) => zipkin?.close(resolve));
    if (NATS_URL) await dropStreams(NATS_URL, namespace);
  });

  test("a node has announced its services to its peers when its start resolves", () => {
    expect(announcedAtStart).toEqual(expect.arrayContaining([expect.arrayContaining(["api"])]));
  });

  test("the caller's id is answered, logged on both nodes, carried by B's event to A, and is both nodes' trace", async () => {
    const user = await signUp(a.baseUrl);
    const requestId = randomHex(16);
    const forgot = await a
      .http()
      .post("/api/auth/forgot-password", { email: user.email }, { headers: { "x-request-id": requestId } });
    expect(forgot.status).toBe(200);
    expect(forgot.headers.get("x-request-id")).toBe(requestId);

    // B mails the link (the log transport) after answering; A logs the response.
    const mailLine = await waitFor(
      () => workerLines.find((l) => l.msg.startsWith(`Mail (log transport) to ${user.email}`)),
      10_000,
      "the reset mail's log line on B",
    );
    expect(mailLine.requestId).toBe(requestId);
    const answered = gatewayLines.filter((l) => l.requestId === requestId);
    expect(answered.map((l) => l.msg)).toEqual([expect.stringContaining("/api/auth/forgot-password")]);

    // The reset broadcasts auth.sessions.revoked from B; A's handler runs under the reset request's id.
    const token = /token=([0-9a-f]{64})/.exec(mailLine.msg)![1];
    const resetId = randomHex(16);
    const reset = await a
      .http()
      .post(
        "/api/auth/reset-password",
        { token, password: "another long password" },
        { headers: { "x-request-id": resetId } },
      );
    expect(reset.status).toBe(200);

    const trace = (id: string) => spans.filter((s) => s.traceId === id.substring(0, 16));
    const traced = await waitFor(
      () => {
        const names = trace(resetId).map((s) => `${s.localEndpoint.serviceName}:${s.name}`);
        return names.some((n) => n.startsWith("api:")) &&
          names.includes("auth:action 'auth.resetPassword'") &&
          names.some((n) => n.startsWith("api:event 'auth.sessions.revoked'"))
          ? names
          : undefined;
      },
      15_000,
      "spans of the reset from both nodes",
    );
    expect(traced).toEqual(
      expect.arrayContaining([expect.stringMatching(/^api:POST \/api\/auth\/reset-password/)]),
    );
    for (const span of trace(resetId)) expect(span.tags.requestID).toBe(resetId);
    // No span carries params (the password, the token) or meta.
    for (const span of spans)
      expect(Object.keys(span.tags).filter((t) => /^(params|meta)\b/.test(t))).toEqual([]);
    expect(JSON.stringify(spans)).not.toContain(token);
    expect(trace(requestId).map((s) => s.localEndpoint.serviceName)).toEqual(
      expect.arrayContaining(["api", "auth"]),
    );
  });

  test("an id that is not a plain token is replaced by a new one; none sent, one is made", async () => {
    const client = new HttpClient(a.baseUrl);
    const forged = await client.get("/api/health", { headers: { "x-request-id": "two words" } });
    const made = forged.headers.get("x-request-id");
    expect(made).toMatch(/^[0-9a-f]{32}$/);
    const none = await client.get("/api/health");
    expect(none.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(none.headers.get("x-request-id")).not.toBe(made);
    await waitFor(
      () => gatewayLines.some((l) => l.requestId === made),
      5_000,
      "the health line with the new id",
    );
    expect(gatewayLines.some((l) => l.requestId === "two words")).toBe(false);
  });
});
