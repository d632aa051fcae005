import crypto from "node:crypto";
import { EncryptJWT, SignJWT, base64url } from "jose";
import {
  createCsrfToken,
  csrfHash,
  decodeSession,
  deriveEncryptionKey,
  encodeSession,
  SESSION_MAX_AGE,
  verifyCsrfCookie,
} from "../../lib/session-token";

// Conformance vectors of the NextAuth v4 wire-protocol reference (section 5.4 and 6.5).
const SECRET = "conformance-test-secret-do-not-use";
const FIXTURE =
  "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..KXfZ-Ug2I8KoOOAZ.gaiAb_oKAghYpmStZFbLUvF_3x0cKSCZ4vbLtICeCTUGLcxuhJUP4NSGmOp5FKN21qNyMVeY3godJp6wWHB21M8lTdBh5v15Oc0xvmQUbdJ8q2SRw8AhXSdZ2sTcOmytyH6rok_zA3MG1L7Tz-vUgbIQx5dzNxdTjk9MvQo4weMIpcrk6l4sw4hdDklHcXWgZgMoCFf06iChmh4xjgetsTc.F-Yfi0s25YCqZJH1n4LVBg";
const FIXTURE_KEY_HEX = "ed58cb5f60579975a59768fa5a52948eef7e7956a595b765143fc8e02ffa21d8";

const now = () => Math.floor(Date.now() / 1000);

/** A token with chosen iat/exp, encrypted exactly as next-auth v4 does. */
function tokenWithTimes(iat: number, exp: number, secret = SECRET) {
  return new EncryptJWT({ name: "Bob", email: "bob@example.com", sub: "user_2" })
    .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(crypto.randomUUID())
    .encrypt(deriveEncryptionKey(secret));
}

describe("session JWE (NextAuth v4)", () => {
  test("the derived key matches the reference vector", () => {
    expect(Buffer.from(deriveEncryptionKey(SECRET)).toString("hex")).toBe(FIXTURE_KEY_HEX);
  });

  test("decrypts the token minted by next-auth 4.24.11", async () => {
    const claims = await decodeSession(FIXTURE, SECRET);
    expect(claims).toEqual({
      name: "Alice Example",
      email: "alice@example.com",
      picture: null,
      sub: "user_1",
      iat: 1795327513,
      exp: 3372127513,
      jti: "284cac52-700d-4023-b307-c1af6e03a644",
    });
  });

  test("our tokens have NextAuth's shape: dir/A256GCM header only, empty key segment, 12-byte IV, 16-byte tag", async () => {
    const token = await encodeSession({ name: "Bob", email: "bob@example.com", sub: "u2" }, SECRET);
    const [header, key, iv, , tag] = token.split(".");
    expect(JSON.parse(Buffer.from(header, "base64url").toString())).toEqual({ alg: "dir", enc: "A256GCM" });
    expect(key).toBe("");
    expect(Buffer.from(iv, "base64url")).toHaveLength(12);
    expect(Buffer.from(tag, "base64url")).toHaveLength(16);
    const claims = await decodeSession(token, SECRET);
    expect(claims).toMatchObject({ name: "Bob", email: "bob@example.com", sub: "u2" });
    expect(claims!.exp! - claims!.iat!).toBe(SESSION_MAX_AGE);
    expect(claims!.jti).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("our tokens decrypt with a from-scratch node:crypto implementation of the v4 cipher", async () => {
    const token = await encodeSession({ name: "Bob", email: "bob@example.com", sub: "u2" }, SECRET);
    const [header, , iv, ciphertext, tag] = token.split(".");
    const key = crypto.hkdfSync("sha256", SECRET, "", "NextAuth.js Generated Encryption Key", 32);
    const decipher = crypto.createDecipheriv("aes-256-gcm", Buffer.from(key), Buffer.from(iv, "base64url"));
    decipher.setAAD(Buffer.from(header, "ascii"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]);
    expect(JSON.parse(plain.toString())).toMatchObject({ sub: "u2", email: "bob@example.com" });
  });

  test("a tampered tag is rejected", async () => {
    const parts = FIXTURE.split(".");
    const tag = parts[4];
    parts[4] = (tag[0] === "A" ? "B" : "A") + tag.slice(1);
    expect(await decodeSession(parts.join("."), SECRET)).toBeNull();
  });

  test("a tampered ciphertext is rejected", async () => {
    const parts = FIXTURE.split(".");
    const ct = parts[3];
    parts[3] = ct.slice(0, 10) + (ct[10] === "A" ? "B" : "A") + ct.slice(11);
    expect(await decodeSession(parts.join("."), SECRET)).toBeNull();
  });

  test("another secret is rejected", async () => {
    expect(await decodeSession(FIXTURE, "another-secret")).toBeNull();
  });

  test("exp 16 s in the past is rejected, 14 s in the past is accepted (15 s tolerance)", async () => {
    const t = now();
    expect(await decodeSession(await tokenWithTimes(t - 100, t - 16), SECRET)).toBeNull();
    expect(await decodeSession(await tokenWithTimes(t - 100, t - 14), SECRET)).toMatchObject({
      sub: "user_2",
    });
  });

  test("a token without exp, or without jti, is rejected", async () => {
    const claims = { name: "Bob", email: "bob@example.com", sub: "user_2" };
    const header = { alg: "dir", enc: "A256GCM" } as const;
    const noExp = await new EncryptJWT(claims)
      .setProtectedHeader(header)
      .setIssuedAt()
      .setJti(crypto.randomUUID())
      .encrypt(deriveEncryptionKey(SECRET));
    const noJti = await new EncryptJWT(claims)
      .setProtectedHeader(header)
      .setIssuedAt()
      .setExpirationTime(now() + 60)
      .encrypt(deriveEncryptionKey(SECRET));
    expect(await decodeSession(noExp, SECRET)).toBeNull();
    expect(await decodeSession(noJti, SECRET)).toBeNull();
    expect(await decodeSession(await tokenWithTimes(now(), now() + 60), SECRET)).not.toBeNull();
  });

  test("a JWS (HS256) signed with the derived key or the secret is rejected", async () => {
    const claims = { name: "Eve", email: "eve@example.com", sub: "user_1" };
    const withKey = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime(now() + 60)
      .sign(deriveEncryptionKey(SECRET));
    const withSecret = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime(now() + 60)
      .sign(new TextEncoder().encode(SECRET));
    expect(await decodeSession(withKey, SECRET)).toBeNull();
    expect(await decodeSession(withSecret, SECRET)).toBeNull();
  });

  test("an unsecured `alg: none` token is rejected", async () => {
    const header = base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }));
    const payload = base64url.encode(JSON.stringify({ sub: "user_1", exp: now() + 60 }));
    expect(await decodeSession(`${header}.${payload}.`, SECRET)).toBeNull();
    // And the same claims dressed as a JWE with alg "none".
    const jweNone = base64url.encode(JSON.stringify({ alg: "none", enc: "A256GCM" }));
    const parts = FIXTURE.split(".");
    expect(await decodeSession([jweNone, ...parts.slice(1)].join("."), SECRET)).toBeNull();
  });

  test("another content encryption (A256CBC-HS512, as Auth.js v5) is rejected", async () => {
    const key = new Uint8Array(
      crypto.hkdfSync("sha256", SECRET, "", "NextAuth.js Generated Encryption Key", 64),
    );
    const token = await new EncryptJWT({ sub: "user_1" })
      .setProtectedHeader({ alg: "dir", enc: "A256CBC-HS512" })
      .setExpirationTime(now() + 60)
      .encrypt(key);
    expect(await decodeSession(token, SECRET)).toBeNull();
  });

  test("garbage is rejected", async () => {
    for (const junk of ["", "abc", "a.b.c.d.e", FIXTURE.slice(0, -5)]) {
      expect(await decodeSession(junk, SECRET)).toBeNull();
    }
  });
});

describe("csrf token (NextAuth v4)", () => {
  test("matches the reference vector", () => {
    const token = "0".repeat(64);
    expect(`${token}|${csrfHash(token, SECRET)}`).toBe(
      "0000000000000000000000000000000000000000000000000000000000000000|aaf7959c10e13d81d8cceb0630b0931d9bc8f7b261df2f7cb56e649719f854e0",
    );
  });

  test("a new token is 64 lowercase hex and its cookie verifies, raw or URL-encoded", () => {
    const { token, cookieValue } = createCsrfToken(SECRET);
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(cookieValue).toBe(`${token}|${csrfHash(token, SECRET)}`);
    expect(verifyCsrfCookie(cookieValue, SECRET)).toBe(token);
    expect(verifyCsrfCookie(encodeURIComponent(cookieValue), SECRET)).toBe(token);
  });

  test("a wrong hash, another secret, a missing part or malformed encoding is refused", () => {
    const { token, cookieValue } = createCsrfToken(SECRET);
    expect(verifyCsrfCookie(cookieValue, "other")).toBeNull();
    expect(verifyCsrfCookie(`${token}|${"0".repeat(64)}`, SECRET)).toBeNull();
    expect(verifyCsrfCookie(token, SECRET)).toBeNull();
    expect(verifyCsrfCookie(`|${csrfHash("", SECRET)}`, SECRET)).toBeNull();
    expect(verifyCsrfCookie(undefined, SECRET)).toBeNull();
    expect(verifyCsrfCookie("%E0%A4%A|x", SECRET)).toBeNull();
  });
});
