import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { embeddedDataDir } from "../../../lib/embedded-postgres";
import { waitFor } from "../../helpers/wait";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../../..");

/** One start of the service on the embedded default: up, health, clean stop. */
const startOnce = (env: NodeJS.ProcessEnv) =>
  run(process.execPath, ["-r", "ts-node/register/transpile-only", "test/fixtures/embedded-start.ts"], {
    cwd: ROOT,
    env,
    timeout: 90_000,
  });

/**
 * `npm start` with no DATABASE_URL: the process starts an embedded
 * PostgreSQL under DATA_DIR, migrates, serves health, keeps the data and a
 * generated AUTH_SECRET for the next start, and stops the server on exit.
 */
test("the embedded default starts, serves health, and starts again on the kept data", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cms-embedded-"));
  fs.chmodSync(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user and must reach the folder
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "warn" };
  delete env.DATABASE_URL;
  delete env.AUTH_SECRET;
  const start = () => startOnce(env);

  const first = JSON.parse((await start()).stdout.trim().split("\n").pop()!);
  expect(first.status).toBe(200);
  expect(first.health).toMatchObject({ status: "ok", checks: { database: "ok" } });
  // In a private clone (a 0700 directory above it), root keeps the data where the postgres user can reach it.
  expect(fs.existsSync(path.join(embeddedDataDir(path.join(dataDir, "pg")), "PG_VERSION"))).toBe(true);
  const secret = fs.readFileSync(path.join(dataDir, "auth-secret"), "utf8");
  expect(secret).toMatch(/^[0-9a-f]{64}$/);

  const second = JSON.parse((await start()).stdout.trim().split("\n").pop()!);
  expect(second.health.status).toBe("ok");
  expect(fs.readFileSync(path.join(dataDir, "auth-secret"), "utf8")).toBe(secret);
  fs.rmSync(dataDir, { recursive: true, force: true });
}, 180_000);

/** Whether a process runs (an exited one not yet reaped does not). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** The processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return fs
    .readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

const postgresUser = () => ({
  uid: Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout),
  gid: Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout),
});

/** The service on the embedded default, left running: resolves once it has answered its health request. */
async function startAndKeepRunning(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ["-r", "ts-node/register/transpile-only", "test/fixtures/embedded-start.ts", "--keep-running"],
    { cwd: ROOT, env, stdio: ["ignore", "pipe", "inherit"] },
  );
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  const line = await waitFor(
    () => output.split("\n").find((l) => l.startsWith("{")),
    90_000,
    "the service up",
  );
  expect(JSON.parse(line).health.status).toBe("ok");
  return child;
}

const postmasterPid = (pgDir: string) =>
  Number(fs.readFileSync(path.join(pgDir, "postmaster.pid"), "utf8").split("\n")[0]);

describe("a service killed with SIGKILL", () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let pgDir: string;
  let child: ChildProcess | undefined;

  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cms-killed-"));
    fs.chmodSync(dataDir, 0o755);
    env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "warn" };
    delete env.DATABASE_URL;
    pgDir = embeddedDataDir(path.join(dataDir, "pg"));
  });

  afterEach(() => child?.kill("SIGKILL"));

  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  test("leaves no PostgreSQL behind, and the next start is healthy", async () => {
    child = await startAndKeepRunning(env);
    const postmaster = postmasterPid(pgDir);
    expect(running(postmaster)).toBe(true);
    // A second start on the same folder while the first lives is refused, and leaves the first's server be.
    await expect(startOnce(env)).rejects.toMatchObject({
      stderr: expect.stringContaining("in use by another start"),
    });
    expect(running(postmaster)).toBe(true);
    child.kill("SIGKILL");
    await waitFor(() => !running(postmaster), 15_000, "the killed service's PostgreSQL to stop");

    const again = JSON.parse((await startOnce(env)).stdout.trim().split("\n").pop()!);
    expect(again.health).toMatchObject({ status: "ok", checks: { database: "ok" } });
  }, 240_000);

  test("a start stops the PostgreSQL its killed predecessor left running (watchdog killed too) and goes on", async () => {
    child = await startAndKeepRunning(env);
    const postmaster = postmasterPid(pgDir);
    const watchdogs = childrenOf(child.pid!).filter((pid) => pid !== postmaster);
    expect(watchdogs).toHaveLength(1);
    process.kill(watchdogs[0], "SIGKILL");
    child.kill("SIGKILL");
    await waitFor(() => !running(child!.pid!), 5000, "the service to die");
    expect(running(postmaster)).toBe(true); // an orphan, nobody left to stop it

    const again = JSON.parse((await startOnce(env)).stdout.trim().split("\n").pop()!);
    expect(again.health).toMatchObject({ status: "ok", checks: { database: "ok" } });
    expect(running(postmaster)).toBe(false);
  }, 240_000);

  test("a stale postmaster.pid (its pid now another process's) does not block a start", async () => {
    const pidFile = path.join(pgDir, "postmaster.pid");
    expect(fs.existsSync(pidFile)).toBe(false); // the clean stop removed it: write one as a crash leaves it
    // PostgreSQL takes a pid it may not signal for a dead one: the stand-in runs as the user PostgreSQL runs as.
    const asPostgres = process.getuid?.() === 0 ? postgresUser() : {};
    child = spawn(process.execPath, ["-e", "setInterval(() => {}, 60_000)"], {
      ...asPostgres,
      stdio: "ignore",
    });
    fs.writeFileSync(pidFile, `${child.pid}\n${pgDir}\n`);
    const again = JSON.parse((await startOnce(env)).stdout.trim().split("\n").pop()!);
    expect(again.health.status).toBe("ok");
  }, 240_000);
});
