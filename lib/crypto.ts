import crypto from "node:crypto";

/** The one place for hashing, random tokens and signatures. */

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniform base62 string (rejection sampling, so no character is favoured). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const randomHex = (bytes: number) => crypto.randomBytes(bytes).toString("hex");

export const sha256Hex = (value: string | Buffer) => crypto.createHash("sha256").update(value).digest("hex");

export const hmacSha256Hex = (key: string, payload: string | Buffer) =>
  crypto.createHmac("sha256", key).update(payload).digest("hex");

/** Constant-time comparison of two strings of any length. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  if (left.length !== right.length) {
    crypto.timingSafeEqual(left, left);
    return false;
  }
  return crypto.timingSafeEqual(left, right);
}

export const newId = () => crypto.randomUUID();
