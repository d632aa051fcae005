import crypto from "node:crypto";
import { authSecret } from "./auth-secret";
import { fieldError } from "./errors";

/**
 * Secrets we must use again (webhook signing secrets, provider credentials,
 * the translation API key) are encrypted at rest (AES-256-GCM), not hashed.
 * The key is derived from AUTH_SECRET with HKDF, so a database dump alone
 * does not reveal them. The HKDF info keeps the name it was first given
 * (webhook endpoints), so secrets sealed since then still open.
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

/** Is this a value `seal` produced? */
export const isSealed = (value: unknown): value is string =>
  typeof value === "string" && /^v1\.[\w-]+\.[\w-]+\.[\w-]*$/.test(value);

const MASK = "••••";

/** Whether a value is shown the way secrets are (a write sending it back means "keep"). */
export const looksMasked = (value: string): boolean => value.startsWith(MASK);

/** How a secret is shown (contract-messaging 1): `••••` and its last 4 characters, or `••••` alone when shorter than 8. */
export const maskSecret = (plain: string): string => (plain.length >= 8 ? MASK + plain.slice(-4) : MASK);

/**
 * A write of a secret: the mask sent back keeps the stored one (`current`,
 * sealed); a mask of no stored secret is refused (400 naming `field`), so it
 * is never stored as the secret; anything else is sealed anew.
 */
export function sealUnlessMask(incoming: string, current: string | null | undefined, field: string): string {
  if (!looksMasked(incoming)) return seal(incoming);
  if (current && incoming === maskSecret(open(current))) return current;
  throw fieldError(field, "is the mask of no stored secret: send the secret itself");
}
