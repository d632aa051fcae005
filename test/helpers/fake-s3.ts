import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local S3-compatible server for the AWS SDK v3 client (path-style): PUT,
 * GET (with a byte range) and DELETE of objects kept in memory, ListObjectsV2 and DeleteObjects
 * (one page), NoSuchKey as S3 answers it, and
 * every request's Authorization header kept, so a test sees the SDK signed
 * with the configured key.
 */

export interface FakeS3 {
  url: string;
  objects: Map<string, { body: Buffer; contentType: string }>;
  authorizations: string[];
  close(): Promise<void>;
}

const NO_SUCH_KEY = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`;

export async function startFakeS3(): Promise<FakeS3> {
  const objects = new Map<string, { body: Buffer; contentType: string }>();
  const authorizations: string[] = [];
  const server = http.createServer(async (req, res) => {
    authorizations.push(req.headers.authorization ?? "");
    const url = new URL(req.url ?? "/", "http://s3");
    const key = decodeURIComponent(url.pathname);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const bucket = key.replace(/\/$/, ""); // bucket operations name `/<bucket>/`
    if (req.method === "GET" && url.searchParams.get("list-type") === "2") {
      const prefix = `${bucket}/${url.searchParams.get("prefix") ?? ""}`;
      const listed = [...objects.keys()]
        .filter((k) => k.startsWith(prefix))
        .map((k) => k.slice(bucket.length + 1));
      const contents = listed.map((k) => `<Contents><Key>${k}</Key></Contents>`).join("");
      res
        .writeHead(200, { "Content-Type": "application/xml" })
        .end(
          `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><KeyCount>${listed.length}</KeyCount><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`,
        );
      return;
    }
    if (req.method === "POST" && url.searchParams.has("delete")) {
      for (const [, k] of Buffer.concat(chunks)
        .toString()
        .matchAll(/<Key>([^<]*)<\/Key>/g))
        objects.delete(`${bucket}/${k}`);
      res
        .writeHead(200, { "Content-Type": "application/xml" })
        .end(`<?xml version="1.0" encoding="UTF-8"?><DeleteResult/>`);
      return;
    }
    if (req.method === "PUT") {
      const body = Buffer.concat(chunks);
      if (req.headers["content-length"] !== String(body.length)) {
        res.writeHead(400).end();
        return;
      }
      objects.set(key, { body, contentType: req.headers["content-type"] ?? "binary/octet-stream" });
      res.writeHead(200, { ETag: '"fake"' }).end();
      return;
    }
    const object = objects.get(key);
    if (req.method === "DELETE") {
      objects.delete(key);
      res.writeHead(204).end();
      return;
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    if (req.method === "GET" && object && range) {
      const [start, end] = [Number(range[1]), Math.min(Number(range[2]), object.body.length - 1)];
      res
        .writeHead(206, {
          "Content-Type": object.contentType,
          "Content-Length": end - start + 1,
          "Content-Range": `bytes ${start}-${end}/${object.body.length}`,
        })
        .end(object.body.subarray(start, end + 1));
      return;
    }
    if (req.method === "GET" && object) {
      res
        .writeHead(200, { "Content-Type": object.contentType, "Content-Length": object.body.length })
        .end(object.body);
      return;
    }
    res.writeHead(404, { "Content-Type": "application/xml" }).end(NO_SUCH_KEY);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    objects,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
