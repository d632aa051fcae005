import { mkdir, readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { Errors } from "moleculer";
import { config, type AppConfig } from "../../lib/config";
import { newId } from "../../lib/crypto";
import { payloadTooLarge, validationError } from "../../lib/errors";
import { compileParamsChecker, unstorableInput } from "../../lib/schema";
import { readJsonBody, receiveMultipartFile, sizeLimit } from "../../lib/uploads";
import { cleanFileName, headCollector, sniffContentType } from "./asset-file";
import { assetStores } from "./asset-store";
import * as repo from "./assets.repo";
import { ASSET_LIMIT_BYTES, RemoteAssetSchema, UploadFieldsSchema } from "./assets.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * New assets as they arrive on the create route's stream: an uploaded file
 * received to disk, typed by its bytes, stored, then its row; or a remote
 * asset's JSON. The stream route checks its own body, the way the
 * validator middleware checks any other route's params.
 */

/** The asset stores of the current configuration (made again when a test reloads it). */
let stores: { of: AppConfig; stores: ReturnType<typeof assetStores> } | undefined;
export function storesOf() {
  const current = config();
  if (stores?.of !== current)
    stores = { of: current, stores: assetStores(current.dataDir, current.assetsS3) };
  return stores.stores;
}

const checkUploadFields = compileParamsChecker(UploadFieldsSchema);
const checkRemote = compileParamsChecker(RemoteAssetSchema);

/** Params as the validator middleware would check them (a stream route checks its own body). */
function checked<T>(check: typeof checkUploadFields, value: unknown, typed: boolean): T {
  const issue = unstorableInput(value);
  if (issue) throw validationError(`${issue.field || "body"} ${issue.message}`, [issue]);
  const result = check(value, typed);
  if (result !== true)
    throw new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", result);
  return value as T;
}

/** Uploads (and inbound mails' attachments) being received (beside the local store, so a finished one moves in without a copy). */
export const incomingDir = () => path.join(config().dataDir, "assets", ".incoming");
/** An upload left in incomingDir longer than this was cut off by a stop or crash. */
const ABANDONED_UPLOAD_MS = 60 * 60 * 1000;

/** Remove uploads a stopped process left half received. */
export async function sweepIncoming(): Promise<void> {
  const names = await readdir(incomingDir()).catch(() => [] as string[]);
  const before = Date.now() - ABANDONED_UPLOAD_MS;
  for (const name of names) {
    const file = path.join(incomingDir(), name);
    const info = await stat(file).catch(() => null);
    if (info && info.mtimeMs < before) await rm(file, { force: true });
  }
}

const tooLarge = () => payloadTooLarge(`The file is larger than ${ASSET_LIMIT_BYTES / 1024 / 1024} MiB`);

/** An uploaded file (multipart `file`), received, sniffed and stored; then its row. Nothing is left behind if any step fails. */
export async function uploadAsset(ws: WorkspaceId, body: Readable, contentType: string): Promise<string> {
  const id = newId();
  await mkdir(incomingDir(), { recursive: true });
  const file = path.join(incomingDir(), id);
  const head = headCollector();
  const store = storesOf().current;
  let stored = false;
  try {
    const received = await receiveMultipartFile(body, contentType, file, {
      field: "file",
      through: sizeLimit(ASSET_LIMIT_BYTES, tooLarge, (chunk) => head.take(chunk)),
    });
    const fields = checked<{ name?: string; categoryId?: string | null; gated?: boolean }>(
      checkUploadFields,
      received.fields,
      false,
    );
    const fileName = cleanFileName(received.fileName) ?? "file";
    const type = await sniffContentType(head.head, head.size <= head.head.length);
    await store.put(`${ws}/${id}`, file, head.size, type);
    stored = true;
    const input = { name: fields.name ?? fileName, categoryId: fields.categoryId, gated: fields.gated };
    const storedFile = { fileName, contentType: type, size: head.size, storage: store.kind };
    await repo.insertAsset(ws, id, input, { file: storedFile });
    return id;
  } catch (err) {
    body.resume();
    await rm(file, { force: true });
    if (stored) await store.remove(`${ws}/${id}`).catch(() => undefined);
    throw err;
  }
}

/** A remote asset (JSON `{name, remoteUrl, categoryId?, gated?}`). */
export async function addRemoteAsset(ws: WorkspaceId, body: Readable): Promise<string> {
  const input = checked<{ name: string; remoteUrl: string; categoryId?: string | null; gated?: boolean }>(
    checkRemote,
    await readJsonBody(body),
    true,
  );
  const id = newId();
  await repo.insertAsset(ws, id, input, { remoteUrl: input.remoteUrl });
  return id;
}
