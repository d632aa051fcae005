import { Readable } from "node:stream";
import type { Static } from "@sinclair/typebox";
import { found, notFound, rangeNotSatisfiable } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import { downloadHeaders, requestedRange } from "../content/asset-file";
import { storesOf } from "../content/asset-intake";
import * as removals from "./attachment-removals.repo";
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

/** Queued removals taken per transaction, and transactions per pass (the rest waits for the next pass). */
const REMOVAL_BATCH = 100;
const REMOVAL_BATCHES = 20;

/**
 * One pass of `inbox.sweepAttachmentRemovals`: the files of deleted messages'
 * attachments removed from the assets' storage (a file already gone is
 * fine), their queue rows with them. Answers how many were removed.
 */
export async function sweepAttachmentRemovals(): Promise<number> {
  let removed = 0;
  for (let batch = 0; batch < REMOVAL_BATCHES; batch += 1) {
    const taken = await removals.removeQueuedBatch(REMOVAL_BATCH, (rows) =>
      Promise.all(rows.map((r) => storesOf().of(r.storage).remove(r.storageKey))).then(() => undefined),
    );
    removed += taken;
    if (taken < REMOVAL_BATCH) break;
  }
  return removed;
}
