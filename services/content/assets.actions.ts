import { requires } from "../../lib/access";
import { Readable } from "node:stream";
import { config } from "../../lib/config";
import { defineAction, defineMixin } from "../../lib/define-service";
import { forbidden, found, notFound, rangeNotSatisfiable, validationError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { WORKSPACE_DELETED_EVENT, workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { linkedContact } from "../messages/links";
import { downloadHeaders, requestedRange } from "./asset-file";
import { addRemoteAsset, storesOf, sweepIncoming, uploadAsset } from "./asset-intake";
import * as repo from "./assets.repo";
import { createOpenApi, results, schemas } from "./assets.schemas";

const WS = "/workspaces/:workspaceId/assets";
const tags = ["Assets"];
const read = requires("forms.read");
const write = requires("forms.write");
const publicUrl = () => config().publicUrl;

/**
 * Downloadable files and links (mixed into `content`; forms.* scopes), in
 * categories. Uploads are multipart (≤25 MiB, typed by their bytes) and kept
 * on local disk or in S3-compatible storage; a gated asset is downloaded
 * only with a link token, which the form gating it hands out.
 */
export const assetActions = defineMixin({
  events: {
    /** The rows went with the workspace (ON DELETE CASCADE); its files go from every storage this replica reaches. */
    async [WORKSPACE_DELETED_EVENT](ctx: AppContext<{ workspaceId: WorkspaceId }>) {
      for (const store of storesOf().all)
        await store
          .removeWorkspace(ctx.params.workspaceId)
          .catch((err: Error) =>
            this.logger.warn(
              `The ${store.kind} files of deleted workspace ${ctx.params.workspaceId} stay: ${err.message}`,
            ),
          );
    },
  },

  async started() {
    await sweepIncoming().catch((err: Error) =>
      this.logger.warn(`Abandoned uploads were not swept: ${err.message}`),
    );
  },

  actions: {
    /** Assets, newest first; `categoryId`, `search`, `sort`. forms.read. */
    assetList: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List assets" },
      ...read,
      params: schemas.list,
      result: results.list,
      handler: (ctx) => {
        const { categoryId, search, sort } = ctx.params;
        return repo.listAssets(
          workspaceOf(ctx),
          pageRequest(ctx.params),
          { categoryId, search, sort },
          publicUrl(),
        );
      },
    }),

    /** Upload a file (multipart `file`, with `name`, `categoryId`, `gated`) or add a remote one (JSON `{name, remoteUrl}`); 201. forms.write. */
    assetCreate: defineAction({
      rest: { method: "POST", path: WS, type: "stream" },
      ...write,
      status: 201,
      result: results.asset,
      openapi: createOpenApi,
      async handler(ctx) {
        const body = ctx.params as unknown;
        if (!(body instanceof Readable))
          throw new Error("content.assetCreate takes the request stream (a stream route)");
        const ws = workspaceOf(ctx);
        const contentType = ctx.meta.contentType ?? "";
        const type = contentType.split(";")[0].trim().toLowerCase();
        let id: string;
        if (type === "multipart/form-data") id = await uploadAsset(ws, body, contentType);
        else if (type === "application/json") id = await addRemoteAsset(ws, body);
        else {
          body.resume();
          throw validationError("Send a file as multipart/form-data, or a remote asset as JSON", [
            { field: "file", message: "content type must be multipart/form-data or application/json" },
          ]);
        }
        return found(await repo.findAsset(ws, id, publicUrl()), "Asset");
      },
    }),

    /** Asset categories by name, each with its number of assets (a bare array). forms.read. */
    assetCategories: defineAction({
      rest: `GET ${WS}/categories`,
      openapi: { tags, summary: "List asset categories" },
      ...read,
      params: schemas.categories,
      result: results.categories,
      handler: (ctx) => repo.listCategories(workspaceOf(ctx)),
    }),

    /** Create a category; a name the workspace has is 409. forms.write. */
    assetCategoryCreate: defineAction({
      rest: `POST ${WS}/categories`,
      openapi: { tags, summary: "Create an asset category" },
      ...write,
      params: schemas.createCategory,
      status: 201,
      result: results.category,
      handler: (ctx) => repo.insertCategory(workspaceOf(ctx), ctx.params.name),
    }),

    /** Delete a category; its assets stay, uncategorised. forms.write. */
    assetCategoryRemove: defineAction({
      rest: `DELETE ${WS}/categories/:categoryId`,
      openapi: { tags, summary: "Delete an asset category" },
      ...write,
      params: schemas.removeCategory,
      result: results.removed,
      async handler(ctx) {
        if (!(await repo.deleteCategory(workspaceOf(ctx), ctx.params.categoryId)))
          throw notFound("Asset category");
        return { success: true as const };
      },
    }),

    /** One asset. forms.read. */
    assetGet: defineAction({
      rest: `GET ${WS}/:assetId`,
      openapi: { tags, summary: "Get an asset" },
      ...read,
      params: schemas.get,
      result: results.asset,
      handler: async (ctx) =>
        found(await repo.findAsset(workspaceOf(ctx), ctx.params.assetId, publicUrl()), "Asset"),
    }),

    /** Rename, move to a category (null: none) or (un)gate an asset. forms.write. */
    assetUpdate: defineAction({
      rest: `PATCH ${WS}/:assetId`,
      openapi: { tags, summary: "Rename, categorise or gate an asset" },
      ...write,
      params: schemas.update,
      result: results.asset,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, assetId, ...input } = ctx.params;
        if (!(await repo.updateAsset(ws, assetId, input))) throw notFound("Asset");
        return found(await repo.findAsset(ws, assetId, publicUrl()), "Asset");
      },
    }),

    /** Delete an asset and its stored file. forms.write. */
    assetRemove: defineAction({
      rest: `DELETE ${WS}/:assetId`,
      openapi: { tags, summary: "Delete an asset" },
      ...write,
      params: schemas.get,
      result: results.removed,
      async handler(ctx) {
        const removed = await repo.deleteAsset(workspaceOf(ctx), ctx.params.assetId);
        if (!removed) throw notFound("Asset");
        if (removed.storage && removed.storageKey) {
          // The row is gone, so the asset is; a file the storage keeps by mistake is only disk.
          await storesOf()
            .of(removed.storage)
            .remove(removed.storageKey)
            .catch((err) => this.logger.warn(`Asset file ${removed.storageKey} was not removed: ${err}`));
        }
        return { success: true as const };
      },
    }),

    /**
     * The file, streamed with its sniffed type (an attachment unless it is a
     * raster image; one `Range` answered as a 206), or a 302 to a remote
     * asset's URL; counted (a part only when it starts the file; HEAD never), and
     * recorded as `asset.downloaded` when `token` names the visitor. A gated
     * asset without a token is 403. Public.
     */
    assetDownload: defineAction({
      rest: "GET /assets/:assetId/download",
      auth: "public",
      openapi: {
        tags,
        summary: "Download an asset",
        responses: {
          "200": {
            description: "The file",
            content: { "*/*": { schema: { type: "string", format: "binary" } } },
          },
          "206": {
            description: "The part a `Range` header asked for (one range; several are answered whole)",
            content: { "*/*": { schema: { type: "string", format: "binary" } } },
          },
          "302": { description: "A remote asset: to its URL" },
          "416": { description: "A range past the end of the file (`Content-Range: bytes */<size>`)" },
        },
      },
      params: schemas.download,
      async handler(ctx) {
        const asset = await repo.downloadTarget(ctx.params.assetId);
        if (!asset) throw notFound("Asset");
        const contactId = linkedContact(ctx.params.token, ["asset", "visitor"], asset.workspaceId);
        if (asset.gated && !contactId) throw forbidden("This asset is downloaded through its form");
        // A file answers a part when asked (a resumed download, a PDF viewer); only its first byte counts a download.
        const range = asset.storage ? requestedRange(ctx.meta.range, asset.size!) : null;
        if (range === "unsatisfiable") throw rangeNotSatisfiable(asset.size!);
        let file: Readable | null = null;
        if (asset.storage && asset.storageKey) {
          file = await storesOf().of(asset.storage).open(asset.storageKey, range);
          if (!file) throw notFound("Asset file");
        }
        // HEAD is safe: it asks what a download would be, and is neither a download nor counted as one.
        const head = ctx.meta.method === "HEAD";
        try {
          if (!head && (!range || range.start === 0)) {
            await repo.countDownload(asset.workspaceId, asset.id);
            if (contactId && isServiceAvailable(ctx.broker, "events"))
              await systemCall(ctx, asset.workspaceId, "events.record", {
                type: "asset.downloaded",
                contactId,
                metadata: { assetId: asset.id, name: asset.name },
              });
          }
        } catch (err) {
          file?.destroy();
          throw err;
        }
        if (!file) {
          ctx.meta.$statusCode = 302;
          ctx.meta.$location = asset.remoteUrl!;
          return null;
        }
        if (head) {
          file.destroy();
          file = Readable.from([]);
        }
        if (range) ctx.meta.$statusCode = 206;
        ctx.meta.$responseType = asset.contentType!;
        ctx.meta.$responseHeaders = downloadHeaders(
          { fileName: asset.fileName ?? asset.name, contentType: asset.contentType!, size: asset.size! },
          range,
        );
        return file;
      },
    }),
  },
});
