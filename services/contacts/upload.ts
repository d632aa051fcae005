import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import busboy from "busboy";
import { payloadTooLarge, validationError } from "../../lib/errors";

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

/**
 * Counts bytes and lines. Past the limit it swallows the rest and fails at the
 * end: the request is read to its end, so the client gets the 413 rather than
 * a reset connection.
 */
function counter(limit: number, onLines: (n: number) => void): Transform {
  let bytes = 0;
  return new Transform({
    flush(done) {
      done(bytes > limit ? tooLarge() : null);
    },
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > limit) return done();
      let n = 0;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n += 1;
      onLines(n);
      done(null, chunk);
    },
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
      // busboy's own errors (no boundary, a body cut short) are the client's malformed body.
      const malformed = (err: Error) =>
        validationError(`The multipart body is malformed: ${err.message}`, [
          { field: "file", message: "is not a readable multipart body" },
        ]);
      const mapping = await new Promise<string | undefined>((resolve, reject) => {
        let fieldMapping: string | undefined;
        let writing: Promise<void> | null = null;
        let form: ReturnType<typeof busboy>;
        try {
          form = busboy({
            headers: { "content-type": contentType! },
            limits: { files: 1, fields: 20, fileSize: limit + 1 },
          });
        } catch (err) {
          reject(malformed(err as Error));
          return;
        }
        form.on("field", (name, value) => {
          if (name === "mapping") fieldMapping = value;
        });
        form.on("file", (name, stream) => {
          if (name !== "file" || writing) {
            stream.resume();
            return;
          }
          writing = pipeline(
            stream,
            counter(limit, (n) => (lines += n)),
            createWriteStream(file),
          );
          writing.catch(() => undefined);
        });
        form.on("error", (err: Error) => reject(malformed(err)));
        form.on("close", () => {
          if (!writing)
            reject(
              validationError("The multipart body has no file field", [
                { field: "file", message: "is required" },
              ]),
            );
          else writing.then(() => resolve(fieldMapping), reject);
        });
        source.on("error", reject);
        source.pipe(form);
      });
      return { file, lines, mapping, cleanup };
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
