import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import busboy from "busboy";
import { payloadTooLarge, validationError } from "./errors";

/**
 * Uploaded files, received to disk as they stream in (memory stays flat
 * whatever the size): a size limit that lets the client read its 413, and a
 * multipart body's one file with its text fields.
 */

/**
 * Passes chunks on while the total stays within `limit`, showing each to
 * `onChunk`. Past the limit it swallows the rest and fails at the end: the
 * request is read to its end, so the client gets the 413 rather than a reset
 * connection.
 */
export function sizeLimit(
  limit: number,
  tooLarge: () => Error,
  onChunk?: (chunk: Buffer) => void,
): Transform {
  let bytes = 0;
  return new Transform({
    flush(done) {
      done(bytes > limit ? tooLarge() : null);
    },
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > limit) return done();
      onChunk?.(chunk);
      done(null, chunk);
    },
  });
}

/** A text field beside the file (a name, a column mapping) is small; a longer one is refused, not cut. */
const FIELD_LIMIT_BYTES = 64 * 1024;

export interface MultipartFile {
  /** The text fields sent beside the file (the last of a repeated name). */
  fields: Record<string, string>;
  /** The file name the client gave, if any (never trusted as a path). */
  fileName: string | null;
}

/**
 * Write the multipart body's `field` file to `target` through `through` (a
 * sizeLimit); other files are drained. A body that is not multipart, is
 * malformed or has no such file is a 400 naming `field`.
 */
export async function receiveMultipartFile(
  source: Readable,
  contentType: string,
  target: string,
  options: { field: string; through: Transform; maxFields?: number },
): Promise<MultipartFile> {
  const { field, through } = options;
  // busboy's own errors (no boundary, a body cut short) are the client's malformed body.
  const malformed = (err: Error) =>
    validationError(`The multipart body is malformed: ${err.message}`, [
      { field, message: "is not a readable multipart body" },
    ]);
  return new Promise<MultipartFile>((resolve, reject) => {
    const fields: Record<string, string> = {};
    let fileName: string | null = null;
    let writing: Promise<void> | null = null;
    let file: WriteStream | null = null;
    // A refusal waits until the file is closed, so the caller's clean-up runs after the file exists, not before
    // an open still under way creates it again.
    const fail = (err: Error) => {
      const open = file !== null && !file.closed;
      file?.destroy();
      void (open ? once(file!, "close") : Promise.resolve()).then(
        () => reject(err),
        () => reject(err),
      );
    };
    let form: ReturnType<typeof busboy>;
    try {
      form = busboy({
        headers: { "content-type": contentType },
        limits: { files: 1, fields: options.maxFields ?? 20, fieldSize: FIELD_LIMIT_BYTES },
      });
    } catch (err) {
      reject(malformed(err as Error));
      return;
    }
    form.on("field", (name, value, info) => {
      if (info.valueTruncated)
        fail(validationError(`${name} is too long`, [{ field: name, message: "must be at most 64 KiB" }]));
      fields[name] = value;
    });
    form.on("file", (name, stream, info) => {
      if (name !== field || writing) {
        stream.resume();
        return;
      }
      fileName = info.filename || null;
      file = createWriteStream(target);
      writing = pipeline(stream, through, file);
      writing.catch(() => undefined);
    });
    form.on("error", (err: Error) => fail(malformed(err)));
    form.on("close", () => {
      if (!writing)
        reject(
          validationError(`The multipart body has no ${field} field`, [{ field, message: "is required" }]),
        );
      else writing.then(() => resolve({ fields, fileName }), fail);
    });
    source.on("error", fail);
    source.pipe(form);
  });
}

/** A stream route's body as text (at most `limit` bytes, as the gateway's own parsers allow); else 413. */
export async function readTextBody(source: Readable, limit = 1024 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of source) {
    length += (chunk as Buffer).length;
    if (length <= limit) chunks.push(chunk as Buffer);
  }
  if (length > limit) throw payloadTooLarge(`The body is larger than ${limit} bytes`);
  return Buffer.concat(chunks).toString("utf8");
}

/** A stream route's JSON body (at most `limit` bytes); else 413, or 400 naming `body`. */
export async function readJsonBody(source: Readable, limit = 1024 * 1024): Promise<unknown> {
  const text = await readTextBody(source, limit);
  try {
    return JSON.parse(text);
  } catch {
    throw validationError("The body is not valid JSON", [{ field: "body", message: "is not valid JSON" }]);
  }
}

/** A file of a multipart body: written to `path`, or only listed (`dropped`) when it is past the limits. */
export interface ReceivedFile {
  /** The part's field name (`attachment-1`). */
  field: string;
  /** The file name the client gave, if any (never trusted as a path). */
  fileName: string | null;
  /** The content type the part declared. */
  declaredType: string;
  /** Its bytes, whether written or not. */
  size: number;
  /** Where it was written; null when dropped. */
  path: string | null;
  dropped: "too_large" | "too_many" | null;
}

/**
 * A multipart body's text fields and files: each of the first `maxFiles`
 * files written to `pathFor()` while it stays within `fileLimit` bytes; a
 * larger one, or one past `maxFiles` (up to `listFiles` in all), is read
 * through and listed as dropped, so the body is never refused for its files.
 * A body that is not multipart, is malformed or has a field over
 * `fieldLimit` is a 400 (the files written are removed).
 */
export async function receiveMultipartFiles(
  source: Readable,
  contentType: string,
  options: {
    pathFor: () => string;
    maxFiles: number;
    fileLimit: number;
    listFiles: number;
    maxFields: number;
    fieldLimit: number;
  },
): Promise<{ fields: Record<string, string>; files: ReceivedFile[] }> {
  const malformed = (message: string, field = "body") =>
    validationError(`The multipart body ${message}`, [{ field, message }]);
  const files: ReceivedFile[] = [];
  const writes: Promise<void>[] = [];
  const removeWritten = () =>
    Promise.all(files.map((f) => (f.path ? rm(f.path, { force: true }) : undefined)));
  const received = new Promise<Record<string, string>>((resolve, reject) => {
    const fields: Record<string, string> = {};
    let form: ReturnType<typeof busboy>;
    try {
      form = busboy({
        headers: { "content-type": contentType },
        limits: { files: options.listFiles, fields: options.maxFields, fieldSize: options.fieldLimit },
      });
    } catch (err) {
      reject(malformed(`is malformed: ${(err as Error).message}`));
      return;
    }
    let refused: Error | null = null;
    // The first refusal answers once the body is read to its end, so the client gets it rather than a reset.
    const refuse = (err: Error) => (refused ??= err);
    form.on("field", (name, value, info) => {
      if (info.valueTruncated)
        refuse(malformed(`field ${name} is longer than ${options.fieldLimit} bytes`, name));
      else fields[name] = value;
    });
    form.on("fieldsLimit", () => refuse(malformed(`has more than ${options.maxFields} fields`)));
    form.on("file", (field, stream, info) => {
      const file: ReceivedFile = {
        field,
        fileName: info.filename || null,
        declaredType: info.mimeType,
        size: 0,
        path: null,
        dropped: null,
      };
      files.push(file);
      if (files.length > options.maxFiles) {
        file.dropped = "too_many";
        stream.on("data", (chunk: Buffer) => (file.size += chunk.length));
        return;
      }
      const target = options.pathFor();
      file.path = target;
      const tooLarge = new Error("too large");
      const written = pipeline(
        stream,
        sizeLimit(options.fileLimit, () => tooLarge),
        createWriteStream(target),
      ).catch(async (err: unknown) => {
        if (err !== tooLarge) throw err;
        await rm(target, { force: true });
        file.path = null;
        file.dropped = "too_large";
      });
      stream.on("data", (chunk: Buffer) => (file.size += chunk.length));
      // Awaited once the body is read; until then a failed write must not count as unhandled.
      written.catch(() => undefined);
      writes.push(written);
    });
    form.on("error", (err: Error) => {
      refuse(malformed(`is malformed: ${err.message}`));
      resolveOrReject();
    });
    form.on("close", () => resolveOrReject());
    const resolveOrReject = () => (refused ? reject(refused) : resolve(fields));
    source.on("error", (err) => {
      refuse(err);
      resolveOrReject();
    });
    source.pipe(form);
  });
  try {
    const fields = await received;
    await Promise.all(writes);
    return { fields, files };
  } catch (err) {
    await Promise.allSettled(writes);
    await removeWritten();
    throw err;
  }
}

/** A form's text fields: a few, short (an upload's file goes through a stream route instead). */
const FORM_FIELDS = 100;
const FORM_FIELD_BYTES = 16 * 1024;

/**
 * A body parser (a gateway route's `use`) for `multipart/form-data` posts of
 * text fields, as body-parser is for form-encoded ones: RFC 8058 one-click
 * unsubscribes come this way. A request already parsed (or a stream route's,
 * which reads its own body) is left alone; files are refused.
 */
export function multipartFieldsParser() {
  return (
    req: IncomingMessage & { _body?: boolean; body?: unknown },
    _res: unknown,
    next: (err?: Error) => void,
  ) => {
    if (req._body || !(req.headers["content-type"] ?? "").toLowerCase().startsWith("multipart/form-data")) {
      next();
      return;
    }
    let form: ReturnType<typeof busboy>;
    try {
      form = busboy({
        headers: req.headers,
        limits: { files: 0, fields: FORM_FIELDS, fieldSize: FORM_FIELD_BYTES },
      });
    } catch (err) {
      next(
        validationError(`The multipart body is malformed: ${(err as Error).message}`, [
          { field: "body", message: "is not a readable multipart body" },
        ]),
      );
      return;
    }
    const fields: Record<string, string> = {};
    let refused = false;
    // The first refusal answers; busboy still reads the body to its end, so the client gets the 400.
    const once = (message: string, field = "body") => {
      if (refused) return;
      refused = true;
      next(validationError(`The multipart body ${message}`, [{ field, message }]));
    };
    form.on("field", (name, value, info) => {
      if (info.valueTruncated) once(`field ${name} is longer than 16 KiB`, name);
      else fields[name] = value;
    });
    form.on("filesLimit", () => once("carries a file; send files to an upload route"));
    form.on("fieldsLimit", () => once(`has more than ${FORM_FIELDS} fields`));
    form.on("error", (err: Error) => once(`is malformed: ${err.message}`));
    form.on("close", () => {
      if (refused) return;
      req.body = fields;
      req._body = true;
      next();
    });
    req.pipe(form);
  };
}
