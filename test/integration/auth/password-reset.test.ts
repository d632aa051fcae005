import type { AddressInfo } from "node:net";
import { waitFor } from "../../helpers/wait";
import { Client } from "pg";
import { SMTPServer } from "smtp-server";
import { startApp, type TestApp } from "../../helpers/app";
import { uniqueEmail } from "../../helpers/http";

/** Only the services this suite exercises (other areas are tested on their own). */
const SERVICES = ["api", "auth", "workspaces"];

/** Forgot/reset password end to end, the mail going through a real SMTP server on 127.0.0.1. */
interface Mail {
  to: string[];
  raw: string;
}
const mails: Mail[] = [];
let smtp: SMTPServer;
let app: TestApp;
let db: Client;
let smtpOpen = true;
const ORIGIN = "http://localhost:3999";

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        mails.push({
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const port = (smtp.server.address() as AddressInfo).port;
  app = await startApp({
    services: SERVICES,
    env: {
      SMTP_URL: `smtp://127.0.0.1:${port}`,
      PUBLIC_URL: ORIGIN,
      MAIL_FROM: "Test <noreply@example.test>",
    },
  });
  db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db.end();
  await app.stop();
  if (smtpOpen) await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

async function newUser() {
  const email = uniqueEmail("reset");
  const password = "original password";
  const res = await app.http().post("/api/auth/register", { name: "Reset Me", email, password });
  expect(res.status).toBe(201);
  return { id: res.body.id as string, email, password };
}

/** The one mail sent to `to` (waits for it with a deadline), and the token in its link. */
async function mailTo(to: string): Promise<{ mail: Mail; token: string }> {
  const found = await waitFor(
    () => {
      const sent = mails.filter((m) => m.to.includes(to));
      return sent.length ? sent : undefined;
    },
    5000,
    `a mail to ${to}`,
  );
  expect(found).toHaveLength(1);
  // quoted-printable may wrap long lines with "=\r\n"
  const body = found[0].raw.replace(/=\r?\n/g, "");
  const match = /\/auth\/reset-password\?token=3D([0-9a-f]+)|\/auth\/reset-password\?token=([0-9a-f]+)/.exec(
    body,
  );
  expect(match).not.toBeNull();
  return { mail: found[0], token: (match![1] ?? match![2])! };
}

const signIn = (email: string, password: string) =>
  app.http().post("/api/auth/callback/credentials", { email, password, json: "true" });

test("forgot-password mails a link; the token resets the password once; new password works, old does not", async () => {
  const user = await newUser();
  const forgot = await app.http().post("/api/auth/forgot-password", { email: user.email.toUpperCase() });
  expect(forgot.status).toBe(200);
  expect(forgot.body).toEqual({ success: true });

  const { mail, token } = await mailTo(user.email);
  expect(mail.raw).toMatch(/^Subject: Reset your password/m);
  expect(mail.raw).toMatch(/^From: Test <noreply@example\.test>/m);
  expect(mail.raw.replace(/=\r?\n/g, "")).toContain(`${ORIGIN}/auth/reset-password?token=`);
  expect(token).toMatch(/^[0-9a-f]{64}$/);

  // only the hash is stored
  const stored = await db.query("SELECT token_hash FROM password_reset_tokens WHERE user_id = $1", [user.id]);
  expect(stored.rows).toHaveLength(1);
  expect(stored.rows[0].token_hash).not.toBe(token);

  const reset = await app.http().post("/api/auth/reset-password", { token, password: "brand new password" });
  expect(reset.status).toBe(200);
  expect(reset.body).toEqual({ success: true });

  expect((await signIn(user.email, "brand new password")).status).toBe(200);
  expect((await signIn(user.email, user.password)).status).toBe(401);

  const again = await app.http().post("/api/auth/reset-password", { token, password: "third password here" });
  expect(again.status).toBe(400);
  expect(again.body).toEqual({
    error: expect.any(String),
    code: "VALIDATION_ERROR",
    details: [{ field: "token", message: expect.any(String) }],
  });
  expect((await signIn(user.email, "third password here")).status).toBe(401);
});

test("an expired token is 400 and changes nothing", async () => {
  const user = await newUser();
  await app.http().post("/api/auth/forgot-password", { email: user.email });
  const { token } = await mailTo(user.email);
  await db.query(
    "UPDATE password_reset_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1",
    [user.id],
  );
  const res = await app.http().post("/api/auth/reset-password", { token, password: "brand new password" });
  expect(res.status).toBe(400);
  expect(res.body.code).toBe("VALIDATION_ERROR");
  expect((await signIn(user.email, user.password)).status).toBe(200);
});

test("the link is valid for an hour", async () => {
  const user = await newUser();
  await app.http().post("/api/auth/forgot-password", { email: user.email });
  await mailTo(user.email);
  const { rows } = await db.query(
    "SELECT extract(epoch FROM expires_at - created_at) AS ttl FROM password_reset_tokens WHERE user_id = $1",
    [user.id],
  );
  expect(Math.round(Number(rows[0].ttl))).toBe(3600);
});

test("an unknown token is 400", async () => {
  for (const token of ["0".repeat(64), "not-a-token"]) {
    const res = await app.http().post("/api/auth/reset-password", { token, password: "brand new password" });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("VALIDATION_ERROR");
  }
});

test("reset-password validates its body: token and password (at least 8 characters)", async () => {
  const short = await app
    .http()
    .post("/api/auth/reset-password", { token: "0".repeat(64), password: "short" });
  expect(short.status).toBe(400);
  expect(short.body.details.map((d: { field: string }) => d.field)).toContain("password");
  const missing = await app.http().post("/api/auth/reset-password", { password: "long enough password" });
  expect(missing.status).toBe(400);
  expect(missing.body.details.map((d: { field: string }) => d.field)).toContain("token");
});

test("a second link kills the first when used; using one kills the other", async () => {
  const user = await newUser();
  await app.http().post("/api/auth/forgot-password", { email: user.email });
  const first = (await mailTo(user.email)).token;
  mails.splice(0, mails.length);
  await app.http().post("/api/auth/forgot-password", { email: user.email });
  const second = (await mailTo(user.email)).token;
  expect(second).not.toBe(first);
  expect(
    (await app.http().post("/api/auth/reset-password", { token: second, password: "brand new password" }))
      .status,
  ).toBe(200);
  expect(
    (await app.http().post("/api/auth/reset-password", { token: first, password: "another new password" }))
      .status,
  ).toBe(400);
});

test("forgot-password for an unknown email is still 200 and sends nothing", async () => {
  const before = mails.length;
  const email = uniqueEmail("nobody");
  const res = await app.http().post("/api/auth/forgot-password", { email });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ success: true });
  // a known address sent right after arrives, so anything for the unknown one would have too
  const user = await newUser();
  await app.http().post("/api/auth/forgot-password", { email: user.email });
  await mailTo(user.email);
  expect(mails.slice(before).filter((m) => m.to.includes(email))).toEqual([]);
  expect(mails.length).toBe(before + 1);
});

test("forgot-password validates the email: 400 naming email", async () => {
  const res = await app.http().post("/api/auth/forgot-password", { email: "nope" });
  expect(res.status).toBe(400);
  expect(res.body.details.map((d: { field: string }) => d.field)).toEqual(["email"]);
});

test("GET /auth/reset-password serves the page that posts the token", async () => {
  const res = await app.http().get("/auth/reset-password?token=abc");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/html/);
  // Its script (a file: the pages' policy runs no inline script) posts the token.
  expect(res.text).toContain('<script src="/reset-password.js"></script>');
  expect((await app.http().get("/reset-password.js")).text).toContain("/api/auth/reset-password");
});

test("with the mail server down, forgot-password for a known email still answers 200 (nothing to tell apart)", async () => {
  const user = await newUser();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  smtpOpen = false;
  const res = await app.http().post("/api/auth/forgot-password", { email: user.email });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ success: true });
});
