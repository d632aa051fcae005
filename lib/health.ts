import http from "node:http";
import { Type, type Static } from "@sinclair/typebox";
import type { Middleware, ServiceBroker } from "moleculer";
import { config } from "./config";
import { database, databaseInUse } from "./database";
import { VERSION } from "./paths";
import { Component, DateTime, StringEnum } from "./schema";

export const HealthSchema = Component(
  "Health",
  Type.Object({
    status: StringEnum(["ok", "degraded"]),
    timestamp: DateTime(),
    version: Type.String(),
    checks: Type.Object({
      database: StringEnum(["ok", "unreachable", "unused"], {
        description: "`unused`: no service of this node uses the database",
      }),
      transporter: StringEnum(["ok", "disconnected", "none"], {
        description: "NATS, which the node's services reach each other by; `none` in the one-process shape",
      }),
    }),
  }),
);
export type HealthReport = Static<typeof HealthSchema>;

const PROBE_TIMEOUT_MS = 2000;

/** A round trip on the shared pool (Sequelize's `authenticate`), bounded so a dead database answers quickly. */
async function databaseReachable(): Promise<boolean> {
  try {
    const sequelize = await database();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timeout")), PROBE_TIMEOUT_MS);
    });
    await Promise.race([sequelize.authenticate(), timeout]).finally(() => clearTimeout(timer));
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether this node can do its work: its database (when a service of the
 * node uses it) answers, and its transporter is connected. A node without
 * either is degraded: not ready, so no traffic or claimed work goes to it.
 */
export async function checkHealth(broker: ServiceBroker): Promise<HealthReport> {
  const database = !databaseInUse() ? "unused" : (await databaseReachable()) ? "ok" : "unreachable";
  return report(database, transporterState(broker));
}

/**
 * Moleculer's NATS transporter stays `connected` until its client closes;
 * while nats.js reconnects after losing the server only the client's protocol
 * handler (public on its connection) knows the socket is gone.
 */
function transporterState(broker: ServiceBroker): "ok" | "disconnected" | "none" {
  const tx = (broker.transit as unknown as { tx?: NatsTransporter } | undefined)?.tx;
  if (!tx) return "none";
  return tx.connected && (tx.client?.protocol?.connected ?? true) ? "ok" : "disconnected";
}

interface NatsTransporter {
  connected?: boolean;
  client?: { protocol?: { connected?: boolean } };
}

function report(
  database: HealthReport["checks"]["database"],
  transporter: HealthReport["checks"]["transporter"],
): HealthReport {
  return {
    status: database !== "unreachable" && transporter !== "disconnected" ? "ok" : "degraded",
    timestamp: new Date().toISOString(),
    version: VERSION,
    checks: { database, transporter },
  };
}

/**
 * With HEALTH_PORT, every node (a worker has no gateway) answers Kubernetes'
 * probes: `GET /ready`, the health above (503 when degraded), and `GET /live`,
 * 200 while the process's event loop turns, so a node whose database is away
 * is taken out of service rather than restarted.
 */
export function healthServer(): Middleware {
  let server: http.Server | undefined;
  return {
    name: "HealthServer",
    async started(broker: ServiceBroker) {
      const port = config().healthPort;
      if (port === undefined) return;
      server = http.createServer((req, res) => {
        const answer = (status: number, body: unknown) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(body));
        };
        if (req.method !== "GET") return answer(405, { error: "Method not allowed" });
        if (req.url === "/live") return answer(200, { status: "ok" });
        if (req.url !== "/ready") return answer(404, { error: "Not found" });
        void checkHealth(broker).then((report) => answer(report.status === "ok" ? 200 : 503, report));
      });
      await new Promise<void>((resolve, reject) => {
        server!.once("error", reject);
        server!.listen(port, config().host, () => resolve());
      });
    },
    async stopped() {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
    },
  } as unknown as Middleware;
}
