import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startFakeS3, type FakeS3 } from "../../helpers/fake-s3";
import { startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { HttpClient, multipartBody, ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * Assets in S3-compatible storage (ASSETS_S3_*), through the AWS SDK v3
 * client against a local S3 server: uploads become signed PUTs of
 * `assets/<workspaceId>/<assetId>` with the sniffed type, downloads stream
 * the object, deletes remove it, a deleted workspace's objects go. A file
 * stored on local disk before the bucket was configured stays downloadable:
 * each row names its storage.
 */

let s3: FakeS3;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let app: TestApp | undefined;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "assets-s3-test-"));

beforeAll(async () => {
  s3 = await startFakeS3();
  db = await createTestDatabase(); // one database for both apps (an app's stop drops only a database it made)
});

afterAll(async () => {
  await app?.stop();
  await s3.close();
  await db?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489", "hex");

async function upload(client: HttpClient, ws: string, bytes: Buffer, name: string) {
  const form = new FormData();
  form.append("file", new Blob([bytes]), name);
  return client.request("POST", `${ws}/assets`, await multipartBody(form));
}

test("uploads go to the bucket, signed with the configured key; downloads stream from it; a file kept on local disk before stays readable", async () => {
  const local = await startApp({
    services: ["api", "auth", "workspaces", "content"],
    databaseUrl: db.url,
    env: { DATA_DIR: dataDir, ASSETS_S3_BUCKET: undefined },
  });
  const ctx = await ownerWithWorkspace(local.baseUrl);
  const before = await upload(ctx.owner.client, ctx.ws, Buffer.from("kept on disk"), "disk.txt");
  expect(before.status).toBe(201);
  await local.stop();

  app = await startApp({
    services: ["api", "auth", "workspaces", "content"],
    databaseUrl: db.url,
    env: {
      DATA_DIR: dataDir,
      ASSETS_S3_BUCKET: "media",
      ASSETS_S3_ENDPOINT: s3.url,
      ASSETS_S3_ACCESS_KEY_ID: "test-access-key",
      ASSETS_S3_SECRET_ACCESS_KEY: "test-secret-key",
    },
  });
  const client = new HttpClient(app.baseUrl);
  for (const [name, value] of ctx.owner.client.cookies) client.cookies.set(name, value);

  const big = Buffer.concat([PNG, Buffer.alloc(3 * 1024 * 1024, 1)]);
  const png = await upload(client, ctx.ws, big, "banner.png");
  expect(png.status).toBe(201);
  expect(png.body).toMatchObject({ contentType: "image/png", size: big.length });
  const key = `/media/assets/${ctx.workspaceId}/${png.body.id}`;
  // Buffer.equals: jest's deep equality walks 3 MB byte by byte for seconds.
  expect(s3.objects.get(key)?.body.equals(big)).toBe(true);
  expect(s3.objects.get(key)?.contentType).toBe("image/png");
  expect(s3.authorizations.at(-1)).toMatch(/^AWS4-HMAC-SHA256 Credential=test-access-key\//);
  expect(fs.existsSync(path.join(dataDir, "assets", ctx.workspaceId, png.body.id))).toBe(false);
  expect(fs.readdirSync(path.join(dataDir, "assets", ".incoming"))).toEqual([]);

  const res = await fetch(`${app.baseUrl}/api/assets/${png.body.id}/download`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-length")).toBe(String(big.length));
  expect(Buffer.from(await res.arrayBuffer()).equals(big)).toBe(true);

  const part = await fetch(`${app.baseUrl}/api/assets/${png.body.id}/download`, {
    headers: { range: "bytes=8-15" },
  });
  expect(part.status).toBe(206);
  expect(part.headers.get("content-range")).toBe(`bytes 8-15/${big.length}`);
  expect(Buffer.from(await part.arrayBuffer()).equals(big.subarray(8, 16))).toBe(true);

  const disk = await fetch(`${app.baseUrl}/api/assets/${before.body.id}/download`);
  expect(await disk.text()).toBe("kept on disk");

  expect((await client.delete(`${ctx.ws}/assets/${png.body.id}`)).body).toEqual({ success: true });
  expect(s3.objects.has(key)).toBe(false);

  // An object the bucket lost is a 404, not a broken stream.
  const lost = await upload(client, ctx.ws, PNG, "lost.png");
  s3.objects.delete(`/media/assets/${ctx.workspaceId}/${lost.body.id}`);
  expect((await fetch(`${app.baseUrl}/api/assets/${lost.body.id}/download`)).status).toBe(404);

  // Deleting the workspace deletes its objects, and only its.
  const other = await ownerWithWorkspace(app.baseUrl);
  const kept = await upload(other.owner.client, other.ws, PNG, "kept.png");
  await upload(client, ctx.ws, PNG, "gone.png");
  expect((await client.delete(ctx.ws)).status).toBe(200);
  await waitFor(
    () => ![...s3.objects.keys()].some((k) => k.includes(ctx.workspaceId)),
    5000,
    "the objects to go",
  );
  expect(s3.objects.has(`/media/assets/${other.workspaceId}/${kept.body.id}`)).toBe(true);
  expect(fs.existsSync(path.join(dataDir, "assets", ctx.workspaceId))).toBe(false);
});
