import { Readable } from "node:stream";
import type { Static } from "@sinclair/typebox";
import { found, notFound, rangeNotSatisfiable } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import { downloadHeaders, requestedRange } from "../content/asset-file";
import { storesOf } from "../content/asset-intake";
import type { schemas } from "./inbox.schemas";
import * as messages from "./inbox-messages.repo";

/**
 * An inbound mail's attachment, streamed from the assets' storage where the
 * providers' inbound path kept it, served as an asset is: its sniffed type,
 * an attachment unless a raster image, `nosniff` and a sandboxing CSP, one
 * `Range` answered with its part.
 */
export async function attachmentFile(ctx: AppContext<Static<typeof schemas.attachment>>) {
  const { threadId, attachmentId } = ctx.params;
  const attachment = found(
    await messages.findAttachment(workspaceOf(ctx), threadId, attachmentId),
    "Attachment",
  );
  const range = requestedRange(ctx.meta.range, attachment.size);
  if (range === "unsatisfiable") throw rangeNotSatisfiable(attachment.size);
  let file = await storesOf().of(attachment.storage).open(attachment.storageKey, range);
  if (!file) throw notFound("Attachment file");
  if (ctx.meta.method === "HEAD") {
    file.destroy();
    file = Readable.from([]);
  }
  if (range) ctx.meta.$statusCode = 206;
  ctx.meta.$responseType = attachment.contentType;
  ctx.meta.$responseHeaders = downloadHeaders(attachment, range);
  return file;
}
