import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { embeddedDataDir } from "../../../lib/embedded-postgres";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../../..");

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
  const start = () =>
    run(process.execPath, ["-r", "ts-node/register/transpile-only", "test/fixtures/embedded-start.ts"], {
      cwd: ROOT,
      env,
      timeout: 90_000,
    });

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
