import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../helpers/browser";
import { waitFor } from "../../helpers/wait";

const ROOT = path.resolve(__dirname, "../../..");
const MARKER = "<!-- first-api-call: the test runs this block -->";

/** The commands of README's first-API-call block: its fenced block after the marker, continued lines joined. */
function readmeCommands(): string[] {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const after = readme.slice(readme.indexOf(MARKER) + MARKER.length);
  const block = /^\s*```sh\n([\s\S]*?)\n```/.exec(after);
  if (!readme.includes(MARKER) || !block) throw new Error("README.md has no first-api-call block");
  return block[1].replace(/\\\n/g, "").split("\n").filter(Boolean);
}

/** A command and its output, run by bash in the clone (the variables of earlier commands kept). */
function bash(
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * README's "From `npm start` to a first API call", as a newcomer runs it on
 * a fresh clone's defaults (no DATABASE_URL, NATS or Redis): `npm start`
 * in one terminal, then the rest in another. Only the port differs (3000
 * may be taken here), so the README cannot drift from what works.
 */
test("README's first API call works as written", async () => {
  const [start, ...rest] = readmeCommands();
  expect(start).toMatch(/^npm start\b/);
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cms-readme-"));
  fs.chmodSync(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user and must reach the folder
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "warn" };
  for (const name of ["DATABASE_URL", "NATS_URL", "REDIS_URL", "TRANSPORTER", "PUBLIC_URL"]) delete env[name];

  let service: ChildProcess | undefined;
  let serviceOutput = "";
  try {
    // Its own process group, so the stop reaches npm's children too.
    service = spawn("bash", ["-c", start], {
      cwd: ROOT,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    service.stdout!.on("data", (chunk) => (serviceOutput += chunk));
    service.stderr!.on("data", (chunk) => (serviceOutput += chunk));
    await waitFor(
      async () => {
        if (service!.exitCode !== null) throw new Error(`npm start exited: ${serviceOutput.slice(-2000)}`);
        return (await fetch(`http://127.0.0.1:${port}/api/health`).catch(() => undefined))?.ok;
      },
      240_000,
      "npm start to serve health",
      500,
    );

    const script = ["set -e", ...rest].join("\n").replaceAll("localhost:3000", `localhost:${port}`);
    const ran = await bash(script, env);
    expect({ code: ran.code, stderr: ran.stderr }).toMatchObject({ code: 0 });
    expect(ran.stderr).toMatch(/Owner you@example.com: created/);
    expect(ran.stderr).toMatch(/Workspace "Acme": created/);
    const [created, listed] = ran.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(created).toMatchObject({ email: "ana@example.com", firstName: "Ana" });
    expect(listed.data).toMatchObject([{ id: created.id, email: "ana@example.com" }]);
  } finally {
    if (service?.pid && service.exitCode === null) {
      process.kill(-service.pid, "SIGTERM");
      await waitFor(
        () => service!.exitCode !== null || service!.signalCode !== null,
        30_000,
        "npm start to stop",
      );
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}, 420_000);
