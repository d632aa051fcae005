import { DataTypes, Model, Sequelize } from "sequelize";

/** CRM models: companies, pipelines, deals, tasks, notifications, saved views, dashboard widgets. */

export interface PipelineStage {
  id: string;
  name: string;
  probability: number | null;
  won: boolean;
  lost: boolean;
}

export type DealStatus = "open" | "won" | "lost";

export class Company extends Model {
  declare id: string;
  declare workspaceId: string;
  declare name: string;
  declare domain: string | null;
  declare website: string | null;
  declare industry: string | null;
  declare employeeCount: number | null;
  declare annualRevenue: string | null;
  declare currency: string | null;
  declare phone: string | null;
  declare description: string | null;
  declare address: Record<string, string>;
  declare ownerId: string | null;
  declare tags: string[];
  declare attributes: Record<string, unknown>;
  declare createdBy: string | null;
  declare createdAt: Date;
  declare updatedAt: Date;
}

export class Pipeline extends Model {
  declare id: string;
  declare workspaceId: string;
  declare name: string;
  declare stages: PipelineStage[];
  declare isDefault: boolean;
  declare createdAt: Date;
  declare updatedAt: Date;
}

export class Deal extends Model {
  declare id: string;
  declare workspaceId: string;
  declare title: string;
  declare value: string;
  declare currency: string;
  declare pipelineId: string;
  declare stageId: string;
  declare status: DealStatus;
  declare contactId: string | null;
  declare companyId: string | null;
  declare ownerId: string | null;
  declare expectedCloseDate: string | null;
  declare closedAt: Date | null;
  declare lostReason: string | null;
  declare description: string | null;
  declare tags: string[];
  declare attributes: Record<string, unknown>;
  declare stageChangedAt: Date;
  declare createdBy: string | null;
  declare createdAt: Date;
  declare updatedAt: Date;
}

export class DealStageHistory extends Model {
  declare id: string;
  declare workspaceId: string;
  declare dealId: string;
  declare fromStageId: string | null;
  declare toStageId: string;
  declare fromStatus: DealStatus | null;
  declare toStatus: DealStatus;
  declare changedBy: string | null;
  declare changedAt: Date;
}

export class Task extends Model {
  declare id: string;
  declare workspaceId: string;
  declare title: string;
  declare description: string | null;
  declare type: string;
  declare priority: string;
  declare dueAt: Date | null;
  declare assigneeId: string | null;
  declare contactId: string | null;
  declare companyId: string | null;
  declare dealId: string | null;
  declare completedAt: Date | null;
  declare completedBy: string | null;
  declare dueNotifiedAt: Date | null;
  declare createdBy: string | null;
  declare createdAt: Date;
  declare updatedAt: Date;
}

export class Notification extends Model {
  declare id: string;
  declare workspaceId: string;
  declare userId: string;
  declare type: string;
  declare title: string;
  declare body: string | null;
  declare resourceType: string | null;
  declare resourceId: string | null;
  declare data: Record<string, unknown>;
  declare dedupeKey: string | null;
  declare readAt: Date | null;
  declare createdAt: Date;
}

export class SavedView extends Model {
  declare id: string;
  declare workspaceId: string;
  declare userId: string;
  declare resource: string;
  declare name: string;
  declare filters: Record<string, unknown>;
  declare sort: string | null;
  declare columns: string[];
  declare shared: boolean;
  declare createdAt: Date;
  declare updatedAt: Date;
}

export class DashboardWidget extends Model {
  declare id: string;
  declare workspaceId: string;
  declare userId: string;
  declare title: string;
  declare kind: string;
  declare endpoint: string;
  declare params: Record<string, unknown>;
  declare position: Record<string, number>;
  declare createdAt: Date;
  declare updatedAt: Date;
}

// Factories, not shared objects: Sequelize writes into each attribute definition it is given.
const id = () => ({ type: DataTypes.TEXT, primaryKey: true });
const text = () => ({ type: DataTypes.TEXT });
const requiredText = () => ({ type: DataTypes.TEXT, allowNull: false });
const json = () => ({ type: DataTypes.JSONB, allowNull: false, defaultValue: {} });
const textArray = () => ({ type: DataTypes.ARRAY(DataTypes.TEXT), allowNull: false, defaultValue: [] });
const date = () => ({ type: DataTypes.DATE });

export function initCrmModels(sequelize: Sequelize): void {
  Company.init(
    {
      id: id(),
      workspaceId: requiredText(),
      name: requiredText(),
      domain: text(),
      website: text(),
      industry: text(),
      employeeCount: { type: DataTypes.INTEGER },
      annualRevenue: { type: DataTypes.DECIMAL(18, 2) },
      currency: text(),
      phone: text(),
      description: text(),
      address: json(),
      ownerId: text(),
      tags: textArray(),
      attributes: json(),
      createdBy: text(),
    },
    { sequelize, tableName: "companies" },
  );
  Pipeline.init(
    {
      id: id(),
      workspaceId: requiredText(),
      name: requiredText(),
      stages: { type: DataTypes.JSONB, allowNull: false, defaultValue: [] },
      isDefault: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
    },
    { sequelize, tableName: "pipelines" },
  );
  Deal.init(
    {
      id: id(),
      workspaceId: requiredText(),
      title: requiredText(),
      value: { type: DataTypes.DECIMAL(18, 2), allowNull: false, defaultValue: 0 },
      currency: requiredText(),
      pipelineId: requiredText(),
      stageId: requiredText(),
      status: requiredText(),
      contactId: text(),
      companyId: text(),
      ownerId: text(),
      expectedCloseDate: { type: DataTypes.DATEONLY },
      closedAt: date(),
      lostReason: text(),
      description: text(),
      tags: textArray(),
      attributes: json(),
      stageChangedAt: { type: DataTypes.DATE, allowNull: false, defaultValue: DataTypes.NOW },
      createdBy: text(),
    },
    { sequelize, tableName: "deals" },
  );
  DealStageHistory.init(
    {
      id: id(),
      workspaceId: requiredText(),
      dealId: requiredText(),
      fromStageId: text(),
      toStageId: requiredText(),
      fromStatus: text(),
      toStatus: requiredText(),
      changedBy: text(),
      changedAt: { type: DataTypes.DATE, allowNull: false, defaultValue: DataTypes.NOW },
    },
    { sequelize, tableName: "deal_stage_history", timestamps: false },
  );
  Task.init(
    {
      id: id(),
      workspaceId: requiredText(),
      title: requiredText(),
      description: text(),
      type: requiredText(),
      priority: requiredText(),
      dueAt: date(),
      assigneeId: text(),
      contactId: text(),
      companyId: text(),
      dealId: text(),
      completedAt: date(),
      completedBy: text(),
      dueNotifiedAt: date(),
      createdBy: text(),
    },
    { sequelize, tableName: "tasks" },
  );
  Notification.init(
    {
      id: id(),
      workspaceId: requiredText(),
      userId: requiredText(),
      type: requiredText(),
      title: requiredText(),
      body: text(),
      resourceType: text(),
      resourceId: text(),
      data: json(),
      dedupeKey: text(),
      readAt: date(),
    },
    { sequelize, tableName: "notifications", updatedAt: false },
  );
  SavedView.init(
    {
      id: id(),
      workspaceId: requiredText(),
      userId: requiredText(),
      resource: requiredText(),
      name: requiredText(),
      filters: json(),
      sort: text(),
      columns: textArray(),
      shared: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
    },
    { sequelize, tableName: "saved_views" },
  );
  DashboardWidget.init(
    {
      id: id(),
      workspaceId: requiredText(),
      userId: requiredText(),
      title: requiredText(),
      kind: requiredText(),
      endpoint: requiredText(),
      params: json(),
      position: json(),
    },
    { sequelize, tableName: "dashboard_widgets" },
  );
}
