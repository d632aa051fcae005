import fs from "node:fs";
import path from "node:path";
import { config } from "./config";
import { randomHex } from "./crypto";

let cached: string | undefined;

/**
 * AUTH_SECRET (alias NEXTAUTH_SECRET) keys the session JWE and the csrf hash.
 * Without it (embedded mode) a secret is generated once and kept under the data dir.
 */
export function authSecret(): string {
  if (cached) return cached;
  const configured = config().authSecret;
  if (configured) return (cached = configured);
  if (config().nodeEnv === "production") throw new Error("AUTH_SECRET must be set in production");
  const file = path.join(config().dataDir, "auth-secret");
  if (!fs.existsSync(file)) {
    fs.mkdirSync(config().dataDir, { recursive: true });
    fs.writeFileSync(file, randomHex(32), { mode: 0o600, flag: "wx" });
  }
  return (cached = fs.readFileSync(file, "utf8").trim());
}
