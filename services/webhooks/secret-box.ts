import crypto from "node:crypto";
import { authSecret } from "../../lib/auth-secret";

/**
 * Endpoint secrets must be usable to sign, so they are encrypted at rest
 * (AES-256-GCM), not hashed. The key is derived from AUTH_SECRET with HKDF,
 * so a database dump alone does not reveal them.
 */
const INFO = "cms webhook endpoint secret v1";
let cachedKey: { secret: string; key: Buffer } | undefined;

function key(): Buffer {
  const secret = authSecret();
  if (cachedKey?.secret !== secret) {
    cachedKey = { secret, key: Buffer.from(crypto.hkdfSync("sha256", secret, Buffer.alloc(0), INFO, 32)) };
  }
  return cachedKey.key;
}

/** `v1.<iv>.<tag>.<ciphertext>` (base64url parts). */
export function seal(plain: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv("aes-256-gcm", key(), iv);
  const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return [
    "v1",
    iv.toString("base64url"),
    cipher.getAuthTag().toString("base64url"),
    data.toString("base64url"),
  ].join(".");
}

export function open(sealed: string): string {
  const [version, iv, tag, data] = sealed.split(".");
  if (version !== "v1" || !iv || !tag || data === undefined) throw new Error("Unknown sealed secret format");
  const decipher = crypto.createDecipheriv("aes-256-gcm", key(), Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
}
