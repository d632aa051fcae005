import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
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

/** A stream route's JSON body (at most `limit` bytes, as the gateway's own JSON parser allows); else 413, or 400 naming `body`. */
export async function readJsonBody(source: Readable, limit = 1024 * 1024): Promise<unknown> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of source) {
    length += (chunk as Buffer).length;
    if (length <= limit) chunks.push(chunk as Buffer);
  }
  if (length > limit) throw payloadTooLarge(`The body is larger than ${limit} bytes`);
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw validationError("The body is not valid JSON", [{ field: "body", message: "is not valid JSON" }]);
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
