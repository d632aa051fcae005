import { newId } from "../../lib/crypto";
import { Binds, likeEscape, query, queryAcrossWorkspaces, uniqueViolation } from "../../lib/database";
import { conflict, fieldError } from "../../lib/errors";
import { selectPage, sortOrder, type Page, type PageRequest } from "../../lib/pagination";
import type { StorageKind } from "./asset-store";
import type { AssetCategoryView, AssetView } from "./assets.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** The SQL of assets and their categories; every statement but the public download's is scoped by workspace. */

interface AssetRow {
  id: string;
  workspace_id: WorkspaceId;
  category_id: string | null;
  name: string;
  file_name: string | null;
  content_type: string | null;
  size: string | null;
  storage: StorageKind | null;
  storage_key: string | null;
  remote_url: string | null;
  gated: boolean;
  downloads: number;
  created_at: Date;
  updated_at: Date;
}

const view = (r: AssetRow, publicUrl: string): AssetView => ({
  id: r.id,
  name: r.name,
  categoryId: r.category_id,
  fileName: r.file_name,
  contentType: r.content_type,
  size: r.size === null ? null : Number(r.size),
  remoteUrl: r.remote_url,
  gated: r.gated,
  downloads: r.downloads,
  downloadUrl: `${publicUrl}/api/assets/${r.id}/download`,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

/** A category that is not the workspace's: 400 on `categoryId` (the foreign key alone would take another workspace's). */
async function checkCategory(workspaceId: WorkspaceId, categoryId: string | null | undefined): Promise<void> {
  if (!categoryId) return;
  const [row] = await query(
    workspaceId,
    `SELECT 1 FROM asset_categories WHERE workspace_id = $1 AND id = $2`,
    [categoryId],
  );
  if (!row) throw fieldError("categoryId", "is not one of the workspace's asset categories");
}

const SORTS: Record<string, string> = {
  createdAt: "created_at",
  name: "lower(name)",
  size: "size",
  downloads: "downloads",
};

export interface AssetFilter {
  categoryId?: string;
  search?: string;
  sort?: string;
}

export async function listAssets(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: AssetFilter,
  publicUrl: string,
): Promise<Page<AssetView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filter.categoryId) where.push(`category_id = ${binds.p(filter.categoryId)}`);
  if (filter.search) {
    const like = binds.p(`%${likeEscape(filter.search)}%`);
    where.push(`(name ILIKE ${like} OR file_name ILIKE ${like})`);
  }
  const order = sortOrder(filter.sort, { ...SORTS, id: "id" }, "-createdAt")
    .map(([column, direction]) => `${column} ${direction} NULLS LAST`)
    .join(", ");
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM assets WHERE ${clause}`, orderBy: order },
    binds.values,
    page,
    (r: AssetRow) => view(r, publicUrl),
  );
}

export async function findAsset(
  workspaceId: WorkspaceId,
  id: string,
  publicUrl: string,
): Promise<AssetView | null> {
  const [row] = await query<AssetRow>(
    workspaceId,
    `SELECT * FROM assets WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
  return row ? view(row, publicUrl) : null;
}

export interface AssetInput {
  name: string;
  categoryId?: string | null;
  gated?: boolean;
}

export type StoredFile = { fileName: string; contentType: string; size: number; storage: StorageKind };

/** A new asset: a stored file (under `<workspaceId>/<id>`) or a remote URL. Its id is chosen first so the file can be stored under it. */
export async function insertAsset(
  workspaceId: WorkspaceId,
  id: string,
  input: AssetInput,
  source: { file: StoredFile } | { remoteUrl: string },
): Promise<void> {
  await checkCategory(workspaceId, input.categoryId);
  const file = "file" in source ? source.file : null;
  await query(
    workspaceId,
    `INSERT INTO assets (id, workspace_id, category_id, name, file_name, content_type, size, storage, storage_key, remote_url, gated)
     VALUES ($2, $1, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      id,
      input.categoryId ?? null,
      input.name,
      file?.fileName ?? null,
      file?.contentType ?? null,
      file?.size ?? null,
      file?.storage ?? null,
      file ? `${workspaceId}/${id}` : null,
      "remoteUrl" in source ? source.remoteUrl : null,
      input.gated ?? false,
    ],
  );
}

/** Rename, move or (un)gate an asset; false when there is none. */
export async function updateAsset(
  workspaceId: WorkspaceId,
  id: string,
  input: Partial<AssetInput>,
): Promise<boolean> {
  await checkCategory(workspaceId, input.categoryId);
  const binds = Binds.inWorkspace([id]);
  const sets = ["updated_at = now()"];
  if (input.name !== undefined) sets.push(`name = ${binds.p(input.name)}`);
  if (input.categoryId !== undefined) sets.push(`category_id = ${binds.p(input.categoryId)}`);
  if (input.gated !== undefined) sets.push(`gated = ${binds.p(input.gated)}`);
  const rows = await query(
    workspaceId,
    `UPDATE assets SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    binds.values,
  );
  return rows.length > 0;
}

/** Delete an asset's row; where its file was, for the caller to remove. Null when there is none. */
export async function deleteAsset(
  workspaceId: WorkspaceId,
  id: string,
): Promise<{ storage: StorageKind | null; storageKey: string | null } | null> {
  const [row] = await query<{ storage: StorageKind | null; storage_key: string | null }>(
    workspaceId,
    `DELETE FROM assets WHERE workspace_id = $1 AND id = $2 RETURNING storage, storage_key`,
    [id],
  );
  return row ? { storage: row.storage, storageKey: row.storage_key } : null;
}

export interface DownloadTarget {
  id: string;
  workspaceId: WorkspaceId;
  name: string;
  gated: boolean;
  fileName: string | null;
  contentType: string | null;
  size: number | null;
  storage: StorageKind | null;
  storageKey: string | null;
  remoteUrl: string | null;
}

/** An asset as its public download needs it (any workspace: the id is the address). */
export async function downloadTarget(id: string): Promise<DownloadTarget | null> {
  const [r] = await queryAcrossWorkspaces<AssetRow>(`SELECT * FROM assets WHERE id = $1`, [id]);
  if (!r) return null;
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    gated: r.gated,
    fileName: r.file_name,
    contentType: r.content_type,
    size: r.size === null ? null : Number(r.size),
    storage: r.storage,
    storageKey: r.storage_key,
    remoteUrl: r.remote_url,
  };
}

export async function countDownload(workspaceId: WorkspaceId, id: string): Promise<void> {
  await query(
    workspaceId,
    `UPDATE assets SET downloads = downloads + 1 WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
}

/** Categories by name, each with its number of assets. */
export async function listCategories(workspaceId: WorkspaceId): Promise<AssetCategoryView[]> {
  const rows = await query<{ id: string; name: string; assets: string; created_at: Date }>(
    workspaceId,
    `SELECT c.id, c.name, c.created_at, count(a.id) AS assets
       FROM asset_categories c LEFT JOIN assets a ON a.category_id = c.id
      WHERE c.workspace_id = $1
      GROUP BY c.id ORDER BY lower(c.name), c.id`,
  );
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    assets: Number(r.assets),
    createdAt: r.created_at.toISOString(),
  }));
}

/** A new category; a name the workspace has (in any case) is 409. */
export async function insertCategory(workspaceId: WorkspaceId, name: string): Promise<AssetCategoryView> {
  const id = newId();
  const [row] = await query<{ created_at: Date }>(
    workspaceId,
    `INSERT INTO asset_categories (id, workspace_id, name) VALUES ($2, $1, $3) RETURNING created_at`,
    [id, name],
  ).catch((err) => {
    if (uniqueViolation(err) === "asset_categories_name_uq")
      throw conflict("Another asset category has this name");
    throw err;
  });
  return { id, name, assets: 0, createdAt: row.created_at.toISOString() };
}

/** Delete a category; its assets stay, uncategorised. False when there is none. */
export async function deleteCategory(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `DELETE FROM asset_categories WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}
