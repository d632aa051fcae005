import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { ServiceBroker } from "moleculer";
import { waitFor } from "./wait";

/**
 * Real processes for the cluster tests: a NATS server of the test's own (so
 * it can be stopped and started again), service nodes as `npm start` runs
 * them (moleculer-runner with `SERVICES`, on the TypeScript sources through
 * ts-node) and a TCP proxy that can cut a dependency away. Everything on
 * 127.0.0.1, on free ports.
 */

const ROOT = path.resolve(__dirname, "../..");
// The package exports only its entry, so its bin is found beside it.
const RUNNER = path.join(path.dirname(require.resolve("moleculer")), "bin", "moleculer-runner.js");

/** Whether Debian's `nats-server` (which .ci/run installs) is on the PATH. */
export const NATS_SERVER_INSTALLED = spawnSync("nats-server", ["--version"]).status === 0;

export async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => resolve(socket.end() && true));
    socket.on("error", () => resolve(false));
  });

export interface NatsServer {
  url: string;
  /** Start it (again, on the same port and JetStream store). */
  start(): Promise<void>;
  /** Kill it (SIGKILL) and wait for its exit. */
  stop(): Promise<void>;
  /** Stop it and remove its store. */
  close(): Promise<void>;
}

/** A nats-server with JetStream on a free port, its store in a temporary folder that outlives restarts. */
export async function startNatsServer(): Promise<NatsServer> {
  const port = await freePort();
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), "cms-nats-"));
  let child: ChildProcess | undefined;
  const server: NatsServer = {
    url: `nats://127.0.0.1:${port}`,
    async start() {
      child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], {
        stdio: "ignore",
      });
      await waitFor(() => listening(port), 10_000, "nats-server listening");
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once("exit", resolve));
      running.kill("SIGKILL");
      await exited;
    },
    async close() {
      await server.stop();
      fs.rmSync(storeDir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

export interface ServiceNode {
  nodeID: string;
  pid: number;
  /** Everything it printed (its warnings and errors, at LOG_LEVEL=warn). */
  output(): string;
  /** Resolves when it has exited: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  running(): boolean;
  kill(signal: NodeJS.Signals): void;
}

/**
 * A node as production runs it: moleculer-runner with the project's broker
 * config and `SERVICES`, the sources through ts-node. `env` is added to the
 * test process's own environment. With `instances`, the runner starts that
 * many copies on one port (`start:cluster --replicas`), nodes `<nodeID>-<n>`,
 * in a process group of their own, which `kill` signals whole.
 */
export function startServiceNode(
  nodeID: string,
  services: string,
  env: Record<string, string>,
  options: { instances?: number } = {},
): ServiceNode {
  const copies = options.instances ? ["--instances", String(options.instances)] : [];
  const child = spawn(
    process.execPath,
    [
      "-r",
      "ts-node/register/transpile-only",
      RUNNER,
      "--config",
      "moleculer.config.ts",
      "--mask",
      "**/*.service.ts",
      ...copies,
    ],
    {
      detached: Boolean(options.instances),
      cwd: ROOT,
      env: {
        ...process.env,
        SERVICEDIR: "services",
        LOG_LEVEL: "warn",
        PORT: "0",
        ...env,
        SERVICES: services,
        NODE_ID: nodeID,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return {
    nodeID,
    pid: child.pid!,
    output: () => output,
    exited,
    running: () => child.exitCode === null && child.signalCode === null,
    kill: (signal) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (options.instances) process.kill(-child.pid!, signal);
      else child.kill(signal);
    },
  };
}

/** Wait until `broker` sees `service` available on the node `nodeID`. */
export function serviceOnNode(broker: ServiceBroker, nodeID: string, service: string, timeoutMs = 120_000) {
  return waitFor(
    () =>
      (
        broker.registry.getServiceList({ onlyAvailable: true }) as unknown as Array<{
          name: string;
          nodeID: string;
        }>
      ).some((s) => s.name === service && s.nodeID === nodeID),
    timeoutMs,
    `${service} on ${nodeID}`,
  );
}

export interface TcpProxy {
  port: number;
  /** Refuse new connections and reset the open ones: the target is unreachable. */
  cut(): Promise<void>;
  /** Accept and forward again. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP proxy on a free port to `targetPort` on 127.0.0.1, which the test can cut and restore. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  let server: net.Server | undefined;
  const listen = async () => {
    if (server) return;
    server = net.createServer((client) => {
      const upstream = net.connect(targetPort, "127.0.0.1");
      track(client);
      track(upstream);
      client.pipe(upstream).pipe(client);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    await new Promise<void>((resolve) => server!.listen(port, "127.0.0.1", resolve));
  };
  const cut = async () => {
    const closing = server ? new Promise<void>((resolve) => server!.close(() => resolve())) : undefined;
    server = undefined;
    for (const socket of sockets) socket.resetAndDestroy();
    await closing;
  };
  await listen();
  return {
    port,
    cut,
    restore: listen,
    close: cut,
  };
}

/**
 * Which of `pids` holds the client end of a TCP connection to 127.0.0.1,
 * found by the client's port (a request's `socket.remotePort`): the socket's
 * inode from /proc/net/tcp, then the process whose descriptors name it.
 */
export function pidOfClient(clientPort: number, pids: number[]): number | undefined {
  const hex = clientPort.toString(16).toUpperCase().padStart(4, "0");
  const line = fs
    .readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .find((cols) => cols[1]?.endsWith(`:${hex}`));
  if (!line) return undefined;
  const socket = `socket:[${line[9]}]`;
  return pids.find((pid) => {
    try {
      return fs
        .readdirSync(`/proc/${pid}/fd`)
        .some((fd) => fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === socket);
    } catch {
      return false;
    }
  });
}
