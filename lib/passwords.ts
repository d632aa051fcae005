import crypto from "node:crypto";
import { promisify } from "node:util";
import { config } from "./config";
import { safeEqual } from "./crypto";

const scrypt = promisify(crypto.scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: crypto.ScryptOptions,
) => Promise<Buffer>;

const KEY_LENGTH = 32;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;

/** scrypt (memory-hard), stored as `scrypt$<log2N>$<r>$<p>$<salt b64>$<hash b64>`. */
export async function hashPassword(password: string, cost = config().passwordCost): Promise<string> {
  const salt = crypto.randomBytes(16);
  const N = 2 ** cost;
  const hash = await scrypt(password, salt, KEY_LENGTH, {
    N,
    r: BLOCK_SIZE,
    p: PARALLELISM,
    maxmem: 256 * N * BLOCK_SIZE,
  });
  return ["scrypt", cost, BLOCK_SIZE, PARALLELISM, salt.toString("base64"), hash.toString("base64")].join(
    "$",
  );
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, cost, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !hash) return false;
  const N = 2 ** Number(cost);
  const candidate = await scrypt(password, Buffer.from(salt, "base64"), KEY_LENGTH, {
    N,
    r: Number(r),
    p: Number(p),
    maxmem: 256 * N * Number(r),
  });
  return safeEqual(candidate.toString("base64"), hash);
}

let dummy: Promise<string> | undefined;
/** Spend the same time on unknown emails as on wrong passwords (no user enumeration by timing). */
export async function burnPasswordCheck(password: string): Promise<void> {
  dummy ??= hashPassword("dummy-password-for-timing");
  await verifyPassword(password, await dummy);
}
