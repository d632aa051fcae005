import fs from "node:fs";
import path from "node:path";
import { config } from "./config";
import { randomHex } from "./crypto";

let cached: { secret: string; for: ReturnType<typeof config> } | undefined;

/**
 * AUTH_SECRET (alias NEXTAUTH_SECRET) keys the session JWE and the csrf hash.
 * Without it (embedded mode) a secret is generated once and kept under the data dir.
 */
export function authSecret(): string {
  if (cached?.for === config()) return cached.secret;
  const secret = readOrCreateSecret();
  cached = { secret, for: config() };
  return secret;
}

function readOrCreateSecret(): string {
  const configured = config().authSecret;
  if (configured) return configured;
  if (config().nodeEnv === "production") throw new Error("AUTH_SECRET must be set in production");
  const file = path.join(config().dataDir, "auth-secret");
  if (!fs.existsSync(file)) {
    fs.mkdirSync(config().dataDir, { recursive: true });
    fs.writeFileSync(file, randomHex(32), { mode: 0o600, flag: "wx" });
  }
  return fs.readFileSync(file, "utf8").trim();
}
