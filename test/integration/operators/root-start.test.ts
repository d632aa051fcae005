import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { sha256Hex } from "../../../lib/crypto";
import { ROOT_RUNTIME_DIR } from "../../../lib/embedded-postgres";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../../..");
const asRoot = process.getuid?.() === 0;
if (!asRoot)
  console.log("root-start.test.ts: skipped: the suite does not run as root (the case is a root start)");

/**
 * `npm start` as root from a clone inside a 0700 directory (a container's
 * /root, or mktemp -d): the embedded PostgreSQL runs as the postgres user,
 * who cannot enter it. The clone is made of symlinks to this checkout,
 * and Node keeps the symlinked paths (--preserve-symlinks), so the
 * binaries and the data are reached through the private directory exactly
 * as in a real clone there.
 */
(asRoot ? test : test.skip)(
  "a root start from a private directory starts, with its data where the README says, and starts again",
  async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "cms-root-")); // 0700
    expect(fs.statSync(home).mode & 0o777).toBe(0o700);
    const clone = path.join(home, "clone");
    fs.mkdirSync(clone);
    for (const entry of [
      "lib",
      "services",
      "models",
      "mixins",
      "public",
      "test",
      "node_modules",
      "moleculer.config.ts",
      "package.json",
      "tsconfig.json",
    ]) {
      fs.symlinkSync(path.join(ROOT, entry), path.join(clone, entry));
    }
    const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: "warn" };
    delete env.DATABASE_URL;
    delete env.DATA_DIR;
    delete env.AUTH_SECRET;
    const start = () =>
      run(
        process.execPath,
        [
          "--preserve-symlinks",
          "--preserve-symlinks-main",
          "-r",
          "ts-node/register/transpile-only",
          "test/fixtures/embedded-start.ts",
        ],
        { cwd: clone, env, timeout: 120_000 },
      );
    const dataDir = path.join(
      ROOT_RUNTIME_DIR,
      `data-${sha256Hex(path.join(clone, ".data", "pg")).slice(0, 12)}`,
    );
    try {
      const first = await start();
      expect(first.stdout).toContain(`data: ${dataDir}`);
      expect(JSON.parse(first.stdout.trim().split("\n").pop()!)).toMatchObject({
        status: 200,
        health: { status: "ok" },
      });
      expect(fs.existsSync(path.join(dataDir, "PG_VERSION"))).toBe(true);
      expect(first.stderr).not.toMatch(/\n\s+at /); // no stack trace
      const second = await start();
      expect(JSON.parse(second.stdout.trim().split("\n").pop()!)).toMatchObject({ status: 200 });
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  },
  300_000,
);
