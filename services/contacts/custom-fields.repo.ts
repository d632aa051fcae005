import { newId } from "../../lib/crypto";
import { query, uniqueViolation } from "../../lib/database";
import { conflict, fieldError, validationError } from "../../lib/errors";
import type { CustomFieldType } from "./custom-fields";
import type { WorkspaceId } from "../../lib/tenancy";

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

export async function listFields(workspaceId: WorkspaceId, groupId?: string): Promise<CustomFieldView[]> {
  const rows = await query<Record<string, unknown>>(
    workspaceId,
    `SELECT * FROM custom_fields WHERE workspace_id = $1 ${groupId ? "AND group_id = $2" : ""} ORDER BY position, key`,
    groupId ? [groupId] : [],
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
  workspaceId: WorkspaceId,
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
  if (input.groupId) {
    const group = await query(
      workspaceId,
      `SELECT 1 FROM custom_field_groups WHERE workspace_id = $1 AND id = $2`,
      [input.groupId],
    );
    if (!group.length)
      throw validationError("groupId does not name a group of this workspace", [
        { field: "groupId", message: "unknown group" },
      ]);
  }
  try {
    const rows = await query<Record<string, unknown>>(
      workspaceId,
      `INSERT INTO custom_fields (id, workspace_id, key, label, type, options, group_id, required, position)
       VALUES ($2, $1, $3, $4, $5, $6::jsonb, $7, $8,
               coalesce($9, (SELECT coalesce(max(position) + 1, 0) FROM custom_fields WHERE workspace_id = $1)))
       RETURNING *`,
      [
        newId(),
        input.key,
        input.label,
        input.type,
        JSON.stringify(options),
        input.groupId ?? null,
        input.required ?? false,
        input.position ?? null,
      ],
    );
    return fieldView(rows[0]);
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`A custom field with key '${input.key}' exists`);
    throw err;
  }
}

export async function listGroups(workspaceId: WorkspaceId): Promise<GroupView[]> {
  const rows = await query<Record<string, unknown>>(
    workspaceId,
    `SELECT g.*, (SELECT count(*) FROM custom_fields f WHERE f.group_id = g.id) AS fields
       FROM custom_field_groups g WHERE g.workspace_id = $1 ORDER BY g.position, g.name`,
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
  workspaceId: WorkspaceId,
  input: { name: string; position?: number },
): Promise<GroupView> {
  try {
    const rows = await query<Record<string, unknown>>(
      workspaceId,
      `INSERT INTO custom_field_groups (id, workspace_id, name, position)
       VALUES ($2, $1, $3, coalesce($4, (SELECT coalesce(max(position) + 1, 0) FROM custom_field_groups WHERE workspace_id = $1)))
       RETURNING *, 0 AS fields`,
      [newId(), input.name, input.position ?? null],
    );
    return groupView(rows[0]);
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`A group named '${input.name}' exists`);
    throw err;
  }
}
