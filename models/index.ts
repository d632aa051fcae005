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
  declare settings: Record<string, unknown>;
  declare createdAt: Date;
  declare updatedAt: Date;
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
}

export class Contact extends Model {
  declare id: string;
  declare workspaceId: string;
  declare email: string | null;
  declare phone: string | null;
  declare firstName: string | null;
  declare lastName: string | null;
  declare externalId: string | null;
  declare locale: string | null;
  declare timezone: string | null;
  declare country: string | null;
  declare city: string | null;
  declare tags: string[];
  declare attributes: Record<string, unknown>;
  declare customFields: Record<string, unknown>;
  declare stage: string | null;
  declare score: number;
  declare companyId: string | null;
  declare ownerId: string | null;
  declare consent: Record<string, ConsentEntry>;
  declare createdAt: Date;
  declare updatedAt: Date;
}

export class WebhookEndpoint extends Model {
  declare id: string;
  declare workspaceId: string;
  declare name: string | null;
  declare url: string | null;
  declare events: string[];
  declare direction: "INBOUND" | "OUTBOUND";
  declare active: boolean;
  declare secretSealed: string | null;
  declare createdBy: string | null;
  declare createdAt: Date;
  declare updatedAt: Date;
}

// Factories, not shared objects: Sequelize writes into each attribute definition it is given.
const id = () => ({ type: DataTypes.TEXT, primaryKey: true });
const text = () => ({ type: DataTypes.TEXT });
const requiredText = () => ({ type: DataTypes.TEXT, allowNull: false });
const json = () => ({ type: DataTypes.JSONB, allowNull: false, defaultValue: {} });

/** Bind every model to the process's one Sequelize instance. */
/** A segment (migration 0020); membership lives in `segment_members`. */
export class Segment extends Model {
  declare id: string;
  declare workspaceId: string;
  declare name: string;
  declare description: string | null;
  declare type: "dynamic" | "static";
  declare filter: Record<string, unknown> | null;
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** A lead-scoring rule (migrations 0021, 0022): an event rule has `eventType`, a condition rule `condition`. */
export class ScoringRule extends Model {
  declare id: string;
  declare workspaceId: string;
  declare name: string;
  declare eventType: string | null;
  declare condition: object | null;
  declare points: number;
  declare active: boolean;
  declare createdAt: Date;
  declare updatedAt: Date;
}

export function initModels(sequelize: Sequelize): void {
  User.init(
    { id: id(), name: requiredText(), email: requiredText(), passwordHash: requiredText() },
    { sequelize, tableName: "users" },
  );
  Workspace.init(
    { id: id(), name: requiredText(), slug: requiredText(), settings: json() },
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
  Contact.init(
    {
      id: id(),
      workspaceId: requiredText(),
      email: text(),
      phone: text(),
      firstName: text(),
      lastName: text(),
      externalId: text(),
      locale: text(),
      timezone: text(),
      country: text(),
      city: text(),
      tags: { type: DataTypes.ARRAY(DataTypes.TEXT), allowNull: false, defaultValue: [] },
      attributes: json(),
      customFields: json(),
      stage: text(),
      score: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
      companyId: text(),
      ownerId: text(),
      consent: json(),
    },
    { sequelize, tableName: "contacts" },
  );

  WebhookEndpoint.init(
    {
      id: id(),
      workspaceId: requiredText(),
      name: text(),
      url: text(),
      events: { type: DataTypes.JSONB, allowNull: false, defaultValue: [] },
      direction: requiredText(),
      active: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
      secretSealed: text(),
      createdBy: text(),
    },
    { sequelize, tableName: "webhook_endpoints" },
  );

  initCrmModels(sequelize);

  Segment.init(
    {
      id: id(),
      workspaceId: requiredText(),
      name: requiredText(),
      description: text(),
      type: requiredText(),
      filter: { type: DataTypes.JSONB },
    },
    { sequelize, tableName: "segments" },
  );
  ScoringRule.init(
    {
      id: id(),
      workspaceId: requiredText(),
      name: requiredText(),
      eventType: text(),
      condition: { type: DataTypes.JSONB },
      points: { type: DataTypes.INTEGER, allowNull: false },
      active: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
    },
    { sequelize, tableName: "scoring_rules" },
  );

  Member.belongsTo(User, { foreignKey: "userId", as: "user" });
  Member.belongsTo(Workspace, { foreignKey: "workspaceId", as: "workspace" });
}

export * from "./crm";
