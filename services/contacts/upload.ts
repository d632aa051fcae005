import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { payloadTooLarge, validationError } from "../../lib/errors";
import { receiveMultipartFile, sizeLimit } from "../../lib/uploads";

/**
 * Receive an uploaded CSV (raw `text/csv` body or the multipart field `file`)
 * into a temporary file, so the request ends before the import job reads it
 * and memory stays flat whatever the size.
 */

export const IMPORT_LIMIT_BYTES = 50 * 1024 * 1024;

export interface Spooled {
  file: string;
  /** Newlines seen: the row count estimate for progress. */
  lines: number;
  /** The multipart `mapping` field, when sent. */
  mapping?: string;
  cleanup: () => Promise<void>;
}

const tooLarge = () => payloadTooLarge(`The CSV is larger than ${IMPORT_LIMIT_BYTES / 1024 / 1024} MiB`);

/** Counts bytes (to the limit) and newlines. */
function counter(limit: number, onLines: (n: number) => void) {
  return sizeLimit(limit, tooLarge, (chunk) => {
    let n = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n += 1;
    onLines(n);
  });
}

const CSV_TYPES = ["text/csv", "application/csv", "text/plain", "application/vnd.ms-excel"];

export async function spoolUpload(
  source: Readable,
  contentType: string | undefined,
  limit = IMPORT_LIMIT_BYTES,
): Promise<Spooled> {
  const type = (contentType ?? "").split(";")[0].trim().toLowerCase();
  const dir = await mkdtemp(path.join(os.tmpdir(), "contacts-import-"));
  const file = path.join(dir, "upload.csv");
  const cleanup = () => rm(dir, { recursive: true, force: true });
  let lines = 0;
  try {
    if (CSV_TYPES.includes(type)) {
      await pipeline(
        source,
        counter(limit, (n) => (lines += n)),
        createWriteStream(file),
      );
      return { file, lines, cleanup };
    }
    if (type === "multipart/form-data") {
      const { fields } = await receiveMultipartFile(source, contentType!, file, {
        field: "file",
        through: counter(limit, (n) => (lines += n)),
      });
      return { file, lines, mapping: fields.mapping, cleanup };
    }
    throw validationError("Send the CSV as text/csv or as multipart/form-data with a file field", [
      { field: "file", message: "content type must be text/csv or multipart/form-data" },
    ]);
  } catch (err) {
    source.resume();
    await cleanup();
    throw err;
  }
}
