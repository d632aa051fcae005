import { QueryTypes } from "sequelize";
import { newId } from "../../lib/crypto";
import { database, uniqueViolation } from "../../lib/database";
import { conflict, fieldError, validationError } from "../../lib/errors";
import type { CustomFieldType } from "./custom-fields";

/** Custom field definitions and their groups. */

export interface CustomFieldView {
  id: string;
  key: string;
  label: string;
  type: CustomFieldType;
  options: string[];
  groupId: string | null;
  required: boolean;
  position: number;
  createdAt: string;
  updatedAt: string;
}

export interface GroupView {
  id: string;
  name: string;
  position: number;
  fields: number;
  createdAt: string;
  updatedAt: string;
}

const fieldView = (r: Record<string, unknown>): CustomFieldView => ({
  id: r.id as string,
  key: r.key as string,
  label: r.label as string,
  type: r.type as CustomFieldType,
  options: r.options as string[],
  groupId: (r.group_id as string | null) ?? null,
  required: r.required as boolean,
  position: r.position as number,
  createdAt: new Date(r.created_at as Date).toISOString(),
  updatedAt: new Date(r.updated_at as Date).toISOString(),
});

export async function listFields(workspaceId: string, groupId?: string): Promise<CustomFieldView[]> {
  const sequelize = await database();
  const rows = await sequelize.query<Record<string, unknown>>(
    `SELECT * FROM custom_fields WHERE workspace_id = $1 ${groupId ? "AND group_id = $2" : ""} ORDER BY position, key`,
    { bind: groupId ? [workspaceId, groupId] : [workspaceId], type: QueryTypes.SELECT },
  );
  return rows.map(fieldView);
}

/** Pure: options fit the type (select types need 1-500 distinct options; others none). */
export function checkOptions(type: CustomFieldType, options: string[] | undefined): string[] {
  const list = options ?? [];
  if (type === "select" || type === "multi-select") {
    if (!list.length) throw fieldError("options", `are required for a ${type} field`);
    if (new Set(list).size !== list.length) throw fieldError("options", "must be distinct");
    return list;
  }
  if (list.length) throw fieldError("options", `are only for select and multi-select fields`);
  return [];
}

export async function createField(
  workspaceId: string,
  input: {
    key: string;
    label: string;
    type: CustomFieldType;
    options?: string[];
    groupId?: string;
    required?: boolean;
    position?: number;
  },
): Promise<CustomFieldView> {
  const options = checkOptions(input.type, input.options);
  const sequelize = await database();
  if (input.groupId) {
    const group = await sequelize.query(
      `SELECT 1 FROM custom_field_groups WHERE workspace_id = $1 AND id = $2`,
      {
        bind: [workspaceId, input.groupId],
        type: QueryTypes.SELECT,
      },
    );
    if (!group.length)
      throw validationError("groupId does not name a group of this workspace", [
        { field: "groupId", message: "unknown group" },
      ]);
  }
  try {
    const rows = await sequelize.query<Record<string, unknown>>(
      `INSERT INTO custom_fields (id, workspace_id, key, label, type, options, group_id, required, position)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8,
               coalesce($9, (SELECT coalesce(max(position) + 1, 0) FROM custom_fields WHERE workspace_id = $2)))
       RETURNING *`,
      {
        bind: [
          newId(),
          workspaceId,
          input.key,
          input.label,
          input.type,
          JSON.stringify(options),
          input.groupId ?? null,
          input.required ?? false,
          input.position ?? null,
        ],
        type: QueryTypes.SELECT,
      },
    );
    return fieldView(rows[0]);
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`A custom field with key '${input.key}' exists`);
    throw err;
  }
}

export async function listGroups(workspaceId: string): Promise<GroupView[]> {
  const sequelize = await database();
  const rows = await sequelize.query<Record<string, unknown>>(
    `SELECT g.*, (SELECT count(*) FROM custom_fields f WHERE f.group_id = g.id) AS fields
       FROM custom_field_groups g WHERE g.workspace_id = $1 ORDER BY g.position, g.name`,
    { bind: [workspaceId], type: QueryTypes.SELECT },
  );
  return rows.map(groupView);
}

const groupView = (r: Record<string, unknown>): GroupView => ({
  id: r.id as string,
  name: r.name as string,
  position: r.position as number,
  fields: Number(r.fields ?? 0),
  createdAt: new Date(r.created_at as Date).toISOString(),
  updatedAt: new Date(r.updated_at as Date).toISOString(),
});

export async function createGroup(
  workspaceId: string,
  input: { name: string; position?: number },
): Promise<GroupView> {
  const sequelize = await database();
  try {
    const rows = await sequelize.query<Record<string, unknown>>(
      `INSERT INTO custom_field_groups (id, workspace_id, name, position)
       VALUES ($1, $2, $3, coalesce($4, (SELECT coalesce(max(position) + 1, 0) FROM custom_field_groups WHERE workspace_id = $2)))
       RETURNING *, 0 AS fields`,
      { bind: [newId(), workspaceId, input.name, input.position ?? null], type: QueryTypes.SELECT },
    );
    return groupView(rows[0]);
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`A group named '${input.name}' exists`);
    throw err;
  }
}
