import { Op } from "sequelize";
import { database, queryAcrossWorkspaces, uniqueViolation } from "../../lib/database";
import { newId, randomBase62, randomHex, sha256Hex } from "../../lib/crypto";
import { conflict } from "../../lib/errors";
import { hashPassword } from "../../lib/passwords";
import { ApiKey, PasswordResetToken, User } from "../../models";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query of the auth area: users, password resets, API keys. */

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export interface UserView {
  id: string;
  name: string;
  email: string;
  createdAt: Date;
}

export const userView = (u: User): UserView => ({
  id: u.id,
  name: u.name,
  email: u.email,
  createdAt: u.createdAt,
});

export async function createUser(name: string, email: string, password: string): Promise<UserView> {
  try {
    const user = await User.create({
      id: newId(),
      name: name.trim(),
      email: normalizeEmail(email),
      passwordHash: await hashPassword(password),
    });
    return userView(user);
  } catch (err) {
    if (uniqueViolation(err)) throw conflict("An account with this email already exists");
    throw err;
  }
}

export const findUserByEmail = (email: string) => User.findOne({ where: { email: normalizeEmail(email) } });

export const RESET_TOKEN_TTL_MS = 60 * 60 * 1000;

/** A single-use reset token; only its hash is stored. */
export async function createResetToken(userId: string): Promise<string> {
  const token = randomHex(32);
  await PasswordResetToken.create({
    id: newId(),
    userId,
    tokenHash: sha256Hex(token),
    expiresAt: new Date(Date.now() + RESET_TOKEN_TTL_MS),
  });
  return token;
}

const liveTokenHolder = async (hash: string): Promise<string | undefined> => {
  const rows = await queryAcrossWorkspaces<{ user_id: string }>(
    `SELECT user_id FROM password_reset_tokens WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()`,
    [hash],
  );
  return rows[0]?.user_id;
};

/**
 * Spend a reset token and set the new password, atomically: the UPDATE
 * claims the token only if it is unused and unexpired, so it works once.
 * The token is looked up before the password is hashed, so a guess costs
 * one indexed read, not a scrypt. Every session of the user issued before
 * the reset ends with it (`sessions_valid_after`, checked on each request).
 */
export async function resetPassword(token: string, password: string): Promise<string | null> {
  const hash = sha256Hex(token);
  if (!(await liveTokenHolder(hash))) return null;
  const sequelize = await database();
  const passwordHash = await hashPassword(password);
  return sequelize.transaction(async (transaction) => {
    const rows = await queryAcrossWorkspaces<{ user_id: string }>(
      `UPDATE password_reset_tokens SET used_at = now()
        WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
        RETURNING user_id`,
      [hash],
      transaction,
    );
    const userId = rows[0]?.user_id;
    if (!userId) return null;
    await queryAcrossWorkspaces(
      `UPDATE users SET password_hash = $2, sessions_valid_after = date_trunc('second', now()), updated_at = now()
        WHERE id = $1`,
      [userId, passwordHash],
      transaction,
    );
    // Any other outstanding link for this user dies with the reset.
    await PasswordResetToken.update(
      { usedAt: new Date() },
      { where: { userId, usedAt: { [Op.is]: null } }, transaction },
    );
    return userId;
  });
}

/** A signed-out session stays refused until its token would have expired anyway. */
export async function revokeSession(sessionId: string, userId: string, expiresAt: Date): Promise<void> {
  await queryAcrossWorkspaces(
    `INSERT INTO revoked_sessions (session_id, user_id, expires_at)
     SELECT $1, id, $3 FROM users WHERE id = $2
     ON CONFLICT (session_id) DO NOTHING`,
    [sessionId, userId, expiresAt],
  );
}

/**
 * Whether a session token still speaks for its user: the user exists, the
 * session was not signed out, and it was issued after the last password reset
 * (`issuedAt` in Unix seconds, as the token's `iat`).
 */
export async function sessionActive(userId: string, sessionId: string, issuedAt: number): Promise<boolean> {
  const rows = await queryAcrossWorkspaces<{ active: boolean }>(
    `SELECT (u.sessions_valid_after IS NULL OR u.sessions_valid_after <= to_timestamp($3))
            AND NOT EXISTS (SELECT 1 FROM revoked_sessions r WHERE r.session_id = $2) AS active
       FROM users u WHERE u.id = $1`,
    [userId, sessionId, issuedAt],
  );
  return rows[0]?.active === true;
}

/** Revocations past their token's expiry are no longer needed: the token is refused as expired. */
export async function pruneRevokedSessions(): Promise<number> {
  const rows = await queryAcrossWorkspaces(
    `DELETE FROM revoked_sessions WHERE expires_at < now() - interval '1 minute' RETURNING 1`,
  );
  return rows.length;
}

export interface ApiKeyView {
  id: string;
  name: string;
  key: string;
  scopes: string[];
  expiresAt: Date | null;
  lastUsedAt?: Date | null;
  createdAt?: Date;
}

export const maskKey = (lastFour: string) => `svc_****${lastFour}`;

export async function listKeys(workspaceId: WorkspaceId): Promise<ApiKeyView[]> {
  const keys = await ApiKey.findAll({
    where: { workspaceId, revokedAt: { [Op.is]: null } },
    order: [
      ["createdAt", "DESC"],
      ["id", "DESC"],
    ],
  });
  return keys.map((k) => ({
    id: k.id,
    name: k.name,
    key: maskKey(k.lastFour),
    scopes: k.scopes,
    expiresAt: k.expiresAt,
    lastUsedAt: k.lastUsedAt,
    createdAt: k.createdAt,
  }));
}

/** `svc_` + 40 base62 characters; the full value exists only in this return value. */
export async function createKey(
  workspaceId: WorkspaceId,
  input: { name: string; scopes: string[]; expiresAt: Date | null; createdBy: string | null },
): Promise<ApiKeyView> {
  const key = `svc_${randomBase62(40)}`;
  const row = await ApiKey.create({
    id: newId(),
    workspaceId,
    name: input.name,
    keyHash: sha256Hex(key),
    lastFour: key.slice(-4),
    scopes: input.scopes,
    expiresAt: input.expiresAt,
    createdBy: input.createdBy,
  });
  return { id: row.id, name: row.name, key, scopes: row.scopes, expiresAt: row.expiresAt };
}

/** Whether a live key was revoked (false: none such in this workspace). */
export async function revokeKey(workspaceId: WorkspaceId, keyId: string): Promise<boolean> {
  const [count] = await ApiKey.update(
    { revokedAt: new Date() },
    { where: { id: keyId, workspaceId, revokedAt: { [Op.is]: null } } },
  );
  return count > 0;
}

export async function verifyKeyHash(keyHash: string) {
  const key = await ApiKey.findOne({ where: { keyHash, revokedAt: { [Op.is]: null } } });
  if (!key) return null;
  return {
    id: key.id,
    workspaceId: key.workspaceId,
    scopes: key.scopes,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  };
}

export async function touchKey(id: string): Promise<void> {
  await ApiKey.update({ lastUsedAt: new Date() }, { where: { id } });
}

/** The names of these users (the ones that exist). */
export async function namesOfUsers(userIds: string[]): Promise<Array<{ id: string; name: string }>> {
  if (!userIds.length) return [];
  const users = await User.findAll({ where: { id: [...new Set(userIds)] }, attributes: ["id", "name"] });
  return users.map((u) => ({ id: u.id, name: u.name }));
}
