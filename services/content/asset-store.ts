import { createReadStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import type { AssetsS3Config } from "../../lib/config";
import type { ByteRange } from "./asset-file";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Where asset files live: a folder on local disk (DATA_DIR/assets, the
 * default) or an S3-compatible bucket. A key is `<workspaceId>/<assetId>`;
 * the row keeps which storage holds it, so a workspace's older files stay
 * readable when the configuration moves to a bucket.
 */

export type StorageKind = "local" | "s3";

export interface AssetStore {
  kind: StorageKind;
  /** Take the received file at `file` (moved or copied, then gone from there). */
  put(key: string, file: string, size: number, contentType: string): Promise<void>;
  /** The file's bytes (those of `range`, inclusive, when given); null when the storage has none under the key. */
  open(key: string, range?: ByteRange | null): Promise<Readable | null>;
  remove(key: string): Promise<void>;
  /** Every file of a workspace (it was deleted). */
  removeWorkspace(workspaceId: WorkspaceId): Promise<void>;
}

/** Keys are our own ids; anything else reaching the disk is refused rather than joined into a path. */
const ID = "[A-Za-z0-9_-]+";
const KEY = new RegExp(`^${ID}/${ID}$`);
function checkedKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`Not an asset storage key: ${key}`);
  return key;
}
function checkedWorkspace(workspaceId: WorkspaceId): string {
  if (!new RegExp(`^${ID}$`).test(workspaceId)) throw new Error(`Not a workspace id: ${workspaceId}`);
  return workspaceId;
}

export function localStore(root: string): AssetStore {
  const at = (key: string) => path.join(root, checkedKey(key));
  return {
    kind: "local",
    async put(key, file) {
      const target = at(key);
      await mkdir(path.dirname(target), { recursive: true });
      await rename(file, target);
    },
    async open(key, range) {
      const file = at(key);
      const exists = await stat(file).then(
        (s) => s.isFile(),
        () => false,
      );
      return exists ? createReadStream(file, range ?? {}) : null;
    },
    async remove(key) {
      await rm(at(key), { force: true });
    },
    async removeWorkspace(workspaceId) {
      await rm(path.join(root, checkedWorkspace(workspaceId)), { recursive: true, force: true });
    },
  };
}

export function s3Store(s3: AssetsS3Config): AssetStore {
  const client = new S3Client({
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: s3.forcePathStyle,
    credentials:
      s3.accessKeyId && s3.secretAccessKey
        ? { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }
        : undefined,
    // Checksums only where S3 requires them: the SDK's default streams uploads as aws-chunked with a trailing CRC, which several S3-compatible servers refuse.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const objectKey = (key: string) => `assets/${checkedKey(key)}`;
  return {
    kind: "s3",
    async put(key, file, size, contentType) {
      await client.send(
        new PutObjectCommand({
          Bucket: s3.bucket,
          Key: objectKey(key),
          Body: createReadStream(file),
          ContentLength: size,
          ContentType: contentType,
        }),
      );
      await rm(file, { force: true });
    },
    async open(key, range) {
      try {
        const answer = await client.send(
          new GetObjectCommand({
            Bucket: s3.bucket,
            Key: objectKey(key),
            Range: range ? `bytes=${range.start}-${range.end}` : undefined,
          }),
        );
        return (answer.Body as Readable | undefined) ?? null;
      } catch (err) {
        if (err instanceof NoSuchKey || (err as { name?: string }).name === "NoSuchKey") return null;
        throw err;
      }
    },
    async remove(key) {
      await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: objectKey(key) }));
    },
    async removeWorkspace(workspaceId) {
      const Prefix = `assets/${checkedWorkspace(workspaceId)}/`;
      // A listing page holds at most 1,000 keys, as many as one DeleteObjects takes; each pass deletes what the last listed.
      for (;;) {
        const page = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix }));
        const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
        if (!keys.length) return;
        await client.send(
          new DeleteObjectsCommand({ Bucket: s3.bucket, Delete: { Objects: keys, Quiet: true } }),
        );
        if (!page.IsTruncated) return;
      }
    },
  };
}

/** The store new uploads go to, and the stores rows name: one of each per process and configuration. */
export function assetStores(dataDir: string, s3: AssetsS3Config | null) {
  const local = localStore(path.join(dataDir, "assets"));
  const bucket = s3 ? s3Store(s3) : null;
  return {
    current: bucket ?? local,
    all: bucket ? [local, bucket] : [local],
    of(kind: StorageKind): AssetStore {
      if (kind === "local") return local;
      if (!bucket) throw new Error("This asset is in S3 storage, and ASSETS_S3_BUCKET is not set");
      return bucket;
    },
  };
}
