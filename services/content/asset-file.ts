import { fileTypeFromBuffer } from "file-type";
import parseRange from "range-parser";

/**
 * What an uploaded file is and how it is served. The type comes from the
 * bytes (file-type reads the signature), never from what the uploader
 * declared; a download is an attachment unless it is a raster image, and
 * never runs as a page of ours.
 */

/** file-type reads at most this many leading bytes. */
export const SNIFF_BYTES = 4100;

/** Raster images a browser may show inline (SVG is script-capable, so it is not one). */
const INLINE_TYPES = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/bmp",
]);

/** Text without a signature: valid UTF-8 with no control character but tab, LF, CR and form feed. */
function looksLikeText(head: Buffer, complete: boolean): boolean {
  // A multi-byte character may be cut at the end of a partial head; drop up to 3 bytes of it.
  for (let cut = 0; cut <= (complete ? 0 : 3); cut += 1) {
    const part = head.subarray(0, head.length - cut);
    try {
      const text = new TextDecoder("utf-8", { fatal: true }).decode(part);
      return !/[^\P{Cc}\t\n\r\f]/u.test(text);
    } catch {
      // not UTF-8 at this cut
    }
  }
  return false;
}

/** The content type of a file from its first bytes (`complete` when that is the whole file). */
export async function sniffContentType(head: Buffer, complete: boolean): Promise<string> {
  if (head.length === 0) return "application/octet-stream";
  const detected = await fileTypeFromBuffer(head);
  if (detected) return detected.mime;
  return looksLikeText(head, complete) ? "text/plain; charset=utf-8" : "application/octet-stream";
}

/** Collects the first SNIFF_BYTES of a stream's chunks. */
export function headCollector() {
  const chunks: Buffer[] = [];
  let length = 0;
  let size = 0;
  return {
    take(chunk: Buffer) {
      size += chunk.length;
      if (length >= SNIFF_BYTES) return;
      const part = chunk.subarray(0, SNIFF_BYTES - length);
      chunks.push(part);
      length += part.length;
    },
    get head() {
      return Buffer.concat(chunks, length);
    },
    get size() {
      return size;
    },
  };
}

/** A file name safe to show and to send back: no path, no control characters, at most 255 characters. */
export function cleanFileName(name: string | null | undefined): string | null {
  const base = (name ?? "").split(/[\\/]/).pop() ?? "";
  const clean = base
    .replace(/\p{Cc}/gu, "")
    .trim()
    .slice(0, 255);
  return clean && clean !== "." && clean !== ".." ? clean : null;
}

/** RFC 6266 Content-Disposition: an ASCII fallback and the UTF-8 name (RFC 8187). */
export function contentDisposition(fileName: string, inline: boolean): string {
  const ascii = fileName.replace(/[^\x20-\x7E]/g, "_").replace(/["\\]/g, "_");
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${inline ? "inline" : "attachment"}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

export interface ByteRange {
  start: number;
  end: number;
}

/**
 * The one byte range a `Range` header asks of a file of `size` bytes (RFC
 * 9110 14.2): null for the whole file (no header, one that cannot be read,
 * another unit, or several ranges, which are served whole rather than as
 * multipart/byteranges); "unsatisfiable" when it lies past the end.
 */
export function requestedRange(header: string | undefined, size: number): ByteRange | null | "unsatisfiable" {
  if (!header) return null;
  const ranges = parseRange(size, header, { combine: true });
  if (ranges === -1) return "unsatisfiable";
  if (ranges === -2 || ranges.type !== "bytes" || ranges.length !== 1) return null;
  return { start: ranges[0].start, end: ranges[0].end };
}

/** The headers of a stored file's download (a 206's when `range` is given). */
export function downloadHeaders(
  file: { fileName: string; contentType: string; size: number },
  range: ByteRange | null = null,
) {
  const inline = INLINE_TYPES.has(file.contentType);
  return {
    "Content-Type": file.contentType,
    "Content-Length": String(range ? range.end - range.start + 1 : file.size),
    "Accept-Ranges": "bytes",
    ...(range ? { "Content-Range": `bytes ${range.start}-${range.end}/${file.size}` } : {}),
    "Content-Disposition": contentDisposition(file.fileName, inline),
    "X-Content-Type-Options": "nosniff",
    // Even opened as a document, the file is a sandboxed page with no script and no access to our origin.
    "Content-Security-Policy": "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox",
    "Cache-Control": "private, no-cache",
  };
}
