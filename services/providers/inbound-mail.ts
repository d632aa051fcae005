import { mkdir, open, rm } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { newId } from "../../lib/crypto";
import { readTextBody, receiveMultipartFiles, type ReceivedFile } from "../../lib/uploads";
import { cleanFileName, SNIFF_BYTES, sniffContentType } from "../content/asset-file";
import { incomingDir, storesOf } from "../content/asset-intake";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The email callbacks' body, read by the providers node from the stream
 * route: JSON or a form as its text (what the signatures are computed
 * over), or a mail an emailapi2 route forwards as multipart: its text
 * fields in form encoding (the signature is fields of the form) and its
 * attachments received to disk. A signed mail's attachments are kept in the
 * assets' storage (DATA_DIR/assets or the S3 bucket, under
 * `<workspaceId>/<id>`, so a deleted workspace takes them along); those past
 * the limits are listed as dropped, never a reason to refuse the mail,
 * which its provider would retry and finally lose.
 */

export const MAX_ATTACHMENTS = 10;
export const ATTACHMENT_LIMIT_BYTES = 10 * 1024 * 1024;
/** Files listed at most, kept or dropped; any further ones are ignored. */
const LISTED_ATTACHMENTS = 50;
/** Mailgun posts the mail's text, HTML and headers as fields: as large as the form and JSON routes allow. */
const FIELD_LIMIT_BYTES = 1024 * 1024;

export interface CallbackBody {
  rawBody: string;
  files: ReceivedFile[];
}

/** An attachment as the inbox keeps it: stored (`id`, `storage`, `storageKey`) or `dropped`. */
export interface InboundAttachment {
  id: string | null;
  fileName: string;
  contentType: string;
  size: number;
  storage: "local" | "s3" | null;
  storageKey: string | null;
  dropped: "too_large" | "too_many" | null;
}

export async function readCallbackBody(body: Readable, contentType: string): Promise<CallbackBody> {
  if (!contentType.toLowerCase().startsWith("multipart/form-data"))
    return { rawBody: await readTextBody(body), files: [] };
  await mkdir(incomingDir(), { recursive: true });
  const { fields, files } = await receiveMultipartFiles(body, contentType, {
    pathFor: () => path.join(incomingDir(), newId()),
    maxFiles: MAX_ATTACHMENTS,
    fileLimit: ATTACHMENT_LIMIT_BYTES,
    listFiles: LISTED_ATTACHMENTS,
    maxFields: 200,
    fieldLimit: FIELD_LIMIT_BYTES,
  });
  return { rawBody: new URLSearchParams(fields).toString(), files };
}

/** Received files not (or no longer) wanted: gone from the incoming folder. */
export async function discardFiles(files: ReceivedFile[]): Promise<void> {
  await Promise.all(files.map((f) => (f.path ? rm(f.path, { force: true }) : undefined)));
}

async function headOf(file: string): Promise<Buffer> {
  const handle = await open(file, "r");
  try {
    const head = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(head, 0, SNIFF_BYTES, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * A mail's files into the assets' storage, each typed by its bytes (as an
 * uploaded asset is; what the mail declared is kept only for a dropped one).
 * What was stored before a failure is removed again.
 */
export async function keepAttachments(
  workspaceId: WorkspaceId,
  files: ReceivedFile[],
): Promise<InboundAttachment[]> {
  const store = storesOf().current;
  const kept: InboundAttachment[] = [];
  try {
    for (const file of files) {
      const fileName = cleanFileName(file.fileName) ?? "attachment";
      if (!file.path) {
        const dropped = file.dropped ?? "too_large";
        const contentType = file.declaredType || "application/octet-stream";
        kept.push({
          id: null,
          fileName,
          contentType,
          size: file.size,
          storage: null,
          storageKey: null,
          dropped,
        });
        continue;
      }
      const id = path.basename(file.path);
      const head = await headOf(file.path);
      const contentType = await sniffContentType(head, file.size <= head.length);
      const storageKey = `${workspaceId}/${id}`;
      await store.put(storageKey, file.path, file.size, contentType);
      file.path = null;
      kept.push({
        id,
        fileName,
        contentType,
        size: file.size,
        storage: store.kind,
        storageKey,
        dropped: null,
      });
    }
    return kept;
  } catch (err) {
    await removeAttachments(kept);
    throw err;
  }
}

/** Stored attachments no message holds (the mail was a duplicate, or filing it failed). */
export async function removeAttachments(attachments: InboundAttachment[]): Promise<void> {
  await Promise.all(
    attachments.map((a) =>
      a.storage && a.storageKey ? storesOf().of(a.storage).remove(a.storageKey) : undefined,
    ),
  );
}
