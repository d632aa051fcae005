import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { embeddedDataDir } from "../../../lib/embedded-postgres";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, uniqueEmail } from "../../helpers/http";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../../..");
const PASSWORD = "correct horse battery staple";

interface SetupRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `npm run setup -- …args` as a process of its own (bin/setup.ts, through ts-node rather than a build). */
async function setup(args: string[], env: NodeJS.ProcessEnv): Promise<SetupRun> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ["-r", "ts-node/register/transpile-only", "bin/setup.ts", ...args],
      { cwd: ROOT, env, timeout: 90_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** The variables of the export line (the whole standard output). */
function exported(stdout: string): Record<string, string> {
  const lines = stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^export( [A-Z_]+='[A-Za-z0-9_-]+')+$/);
  return Object.fromEntries([...lines[0].matchAll(/([A-Z_]+)='([^']*)'/g)].map((m) => [m[1], m[2]]));
}

/**
 * The operator's first run against DATABASE_URL: the owner, a workspace and
 * a key with every scope, through the API's own actions; idempotent; weak
 * passwords refused as register refuses them.
 */
describe("npm run setup with DATABASE_URL", () => {
  let app: TestApp;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    app = await startApp({ services: ["api", "auth", "workspaces", "contacts"] });
    env = { ...process.env, DATABASE_URL: app.databaseUrl, LOG_LEVEL: "warn" };
    delete env.NATS_URL;
  }, 60_000);
  afterAll(() => app?.stop());

  it("creates the owner, a workspace and a working key once, and a second run creates nothing", async () => {
    const email = uniqueEmail("operator");
    const args = ["--email", email, "--password", PASSWORD, "--workspace", "Acme"];
    const first = await setup(args, env);
    expect(first.code).toBe(0);
    const vars = exported(first.stdout);
    expect(vars.API_KEY).toMatch(/^svc_[A-Za-z0-9]{40}$/);
    expect(first.stderr).toContain(`Owner ${email}: created (user ${vars.USER_ID})`);
    expect(first.stderr).toContain(`Workspace "Acme": created (${vars.WORKSPACE_ID})`);
    expect(first.stderr).toMatch(/API key "setup" with every scope: created/);
    expect(first.stderr.split(vars.API_KEY)).toHaveLength(1); // printed once: on the export line only

    // The key works through the gateway, for any scope.
    const api = new HttpClient(app.baseUrl);
    api.bearer = vars.API_KEY;
    const ws = `/api/workspaces/${vars.WORKSPACE_ID}`;
    expect((await api.post(`${ws}/contacts`, { email: "ana@example.com" })).status).toBe(201);
    expect((await api.get(`${ws}/contacts`)).body.data).toHaveLength(1);

    const second = await setup(args, env);
    expect(second.code).toBe(0);
    expect(exported(second.stdout)).toEqual({ USER_ID: vars.USER_ID, WORKSPACE_ID: vars.WORKSPACE_ID });
    expect(second.stderr).toContain("already there, password checked");
    expect(second.stderr).toMatch(/API key "setup": already there, kept .*only its hash is stored/);
    expect(second.stderr).toContain(`POST /api/workspaces/${vars.WORKSPACE_ID}/keys`);
    expect(second.stderr).toContain("Nothing new was created.");

    // The owner signs in with the password given; one workspace, one key.
    const owner = new HttpClient(app.baseUrl);
    expect(
      (await owner.post("/api/auth/callback/credentials", { email, password: PASSWORD, json: "true" }))
        .status,
    ).toBe(200);
    const mine = (await owner.get("/api/workspaces")).body;
    expect(mine).toMatchObject([{ id: vars.WORKSPACE_ID, name: "Acme", role: "OWNER" }]);
    const keys = (await owner.get(`${ws}/keys`)).body;
    expect(keys).toMatchObject([{ name: "setup", scopes: ["*"] }]);
  }, 120_000);

  it("refuses a weak password as register does, and creates nothing", async () => {
    const email = uniqueEmail("weak");
    const refused = await setup(["--email", email, "--password", "short"], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    const register = await app.http().post("/api/auth/register", { name: "Weak", email, password: "short" });
    expect(register.status).toBe(400);
    const detail = register.body.details.find((d: { field: string }) => d.field === "password");
    expect(refused.stderr).toContain(`setup refused: ${register.body.error}: password ${detail.message}`);
    // Nobody was created: the address is still free.
    const later = await app.http().post("/api/auth/register", { name: "Strong", email, password: PASSWORD });
    expect(later.status).toBe(201);
  }, 60_000);

  it("refuses an existing account's email with another password", async () => {
    const email = uniqueEmail("taken");
    expect(
      (await app.http().post("/api/auth/register", { name: "A", email, password: PASSWORD })).status,
    ).toBe(201);
    const refused = await setup(["--email", email, "--password", "another long password"], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("exists and that is not its password; nothing was changed");
  }, 60_000);
});

test("npm run setup on the embedded default starts the embedded PostgreSQL, and stops it after", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cms-setup-"));
  fs.chmodSync(dataDir, 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "warn" };
  delete env.DATABASE_URL;
  delete env.NATS_URL;
  try {
    const done = await setup(["--email", "owner@example.com", "--password", PASSWORD], env);
    expect(done.code).toBe(0);
    expect(exported(done.stdout).API_KEY).toMatch(/^svc_/);
    expect(done.stderr).toContain('Workspace "My workspace": created');
    const pgDir = embeddedDataDir(path.join(dataDir, "pg"));
    expect(fs.existsSync(path.join(pgDir, "PG_VERSION"))).toBe(true);
    expect(fs.existsSync(path.join(pgDir, "postmaster.pid"))).toBe(false);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}, 120_000);
