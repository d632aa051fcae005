import { DataTypes, Model, Sequelize } from "sequelize";
import { initCrmModels } from "./crm";

/**
 * Typed Sequelize models over the tables the migrations create.
 * Columns are snake_case in SQL, camelCase here (`underscored: true`).
 */

export type Role = "OWNER" | "ADMIN" | "MEMBER" | "VIEWER";

export class User extends Model {
  declare id: string;
  declare name: string;
  declare email: string;
  declare passwordHash: string;
  declare createdAt: Date;
  declare updatedAt: Date;
}

export class Workspace extends Model {
  declare id: string;
  declare name: string;
  declare slug: string;
  /** Public key of the website script; set by the database, never written here. */
  declare siteKey: string;
  declare settings: Record<string, unknown>;
  /** Written by one statement in workspaces.repo.ts (noteRefusedOrigins), only read here. */
  declare refusedOrigins: RefusedOrigin[];
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** A browser origin the workspace's `allowedOrigins` refused: how often, and when last. */
export interface RefusedOrigin {
  origin: string;
  count: number;
  lastAt: string;
}

export class Member extends Model {
  declare id: string;
  declare workspaceId: string;
  declare userId: string;
  declare role: Role;
  declare createdAt: Date;
  declare user?: User;
  declare workspace?: Workspace;
}

export class ApiKey extends Model {
  declare id: string;
  declare workspaceId: string;
  declare name: string;
  declare keyHash: string;
  declare lastFour: string;
  declare scopes: string[];
  declare expiresAt: Date | null;
  declare lastUsedAt: Date | null;
  declare revokedAt: Date | null;
  declare createdBy: string | null;
  declare createdAt: Date;
}

export class AuditLog extends Model {
  declare id: string;
  declare workspaceId: string;
  declare actorType: string;
  declare actorId: string | null;
  declare action: string;
  declare targetType: string | null;
  declare targetId: string | null;
  declare ip: string | null;
  declare metadata: Record<string, unknown>;
  declare createdAt: Date;
}

export class PasswordResetToken extends Model {
  declare id: string;
  declare userId: string;
  declare tokenHash: string;
  declare expiresAt: Date;
  declare usedAt: Date | null;
}

export type ConsentStatus = "opted_in" | "opted_out" | "unknown";
export interface ConsentEntry {
  status: ConsentStatus;
  source: string | null;
  updatedAt: string | null;
  /** The message whose link the contact used for this change, when there was one. */
  messageId?: string | null;
}

// Factories, not shared objects: Sequelize writes into each attribute definition it is given.
const id = () => ({ type: DataTypes.TEXT, primaryKey: true });
const text = () => ({ type: DataTypes.TEXT });
const requiredText = () => ({ type: DataTypes.TEXT, allowNull: false });
const json = () => ({ type: DataTypes.JSONB, allowNull: false, defaultValue: {} });

/** Bind every model to the process's one Sequelize instance. */
export function initModels(sequelize: Sequelize): void {
  User.init(
    { id: id(), name: requiredText(), email: requiredText(), passwordHash: requiredText() },
    { sequelize, tableName: "users" },
  );
  Workspace.init(
    {
      id: id(),
      name: requiredText(),
      slug: requiredText(),
      siteKey: { type: DataTypes.TEXT },
      settings: json(),
      refusedOrigins: { type: DataTypes.JSONB, allowNull: false, defaultValue: [] },
    },
    { sequelize, tableName: "workspaces" },
  );
  Member.init(
    { id: id(), workspaceId: requiredText(), userId: requiredText(), role: requiredText() },
    { sequelize, tableName: "members" },
  );
  ApiKey.init(
    {
      id: id(),
      workspaceId: requiredText(),
      name: requiredText(),
      keyHash: requiredText(),
      lastFour: requiredText(),
      scopes: { type: DataTypes.JSONB, allowNull: false, defaultValue: [] },
      expiresAt: { type: DataTypes.DATE },
      lastUsedAt: { type: DataTypes.DATE },
      revokedAt: { type: DataTypes.DATE },
      createdBy: text(),
    },
    { sequelize, tableName: "api_keys" },
  );
  AuditLog.init(
    {
      id: id(),
      workspaceId: requiredText(),
      actorType: requiredText(),
      actorId: text(),
      action: requiredText(),
      targetType: text(),
      targetId: text(),
      ip: text(),
      metadata: json(),
    },
    { sequelize, tableName: "audit_logs", updatedAt: false },
  );
  PasswordResetToken.init(
    {
      id: id(),
      userId: requiredText(),
      tokenHash: requiredText(),
      expiresAt: { type: DataTypes.DATE },
      usedAt: { type: DataTypes.DATE },
    },
    { sequelize, tableName: "password_reset_tokens", updatedAt: false },
  );
  initCrmModels(sequelize);
  Member.belongsTo(User, { foreignKey: "userId", as: "user" });
  Member.belongsTo(Workspace, { foreignKey: "workspaceId", as: "workspace" });
}

export * from "./crm";
