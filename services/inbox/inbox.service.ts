import { requires } from "../../lib/access";
import { audit } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { found, invalidState, notFound } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { queueStatsAction } from "../../lib/queue-stats";
import { workspaceOf } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { assignWaiting, reassignUnanswered } from "./assignment";
import { attachmentFile, sweepAttachmentRemovals } from "./attachments";
import { removalQueueFigures } from "./attachment-removals.repo";
import { rulesActions } from "./rules.actions";
import { results, schemas } from "./inbox.schemas";
import * as messages from "./inbox-messages.repo";
import { receive, receiveMany } from "./receive";
import { deliver } from "./replies";
import * as threads from "./threads.repo";
import { createThread, getThread, listThreads, replyTo, updateThread } from "./threads";

const WS = "/workspaces/:workspaceId/inbox";
const tags = ["Inbox"];
const read = requires("inbox.read");
const write = requires("inbox.write");

/**
 * The shared inbox (contract-messaging 11): conversations per contact and
 * channel from every inbound channel, answered at once through the send
 * path; assignment rules, auto-replies and canned responses (rules.actions.ts).
 */
export default defineService({
  name: "inbox",
  mixins: [DatabaseMixin, BackgroundMixin, rulesActions],
  settings: { rest: "/" },

  actions: {
    /** Threads newest first, with unread counts per member in `unread`. inbox.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      ...read,
      params: schemas.list,
      result: results.list,
      openapi: {
        tags,
        summary:
          "List conversations, newest message first (filters status, channel, assigneeId (`me`), contactId, search); `unread` counts unread threads and messages in all, the caller's, and per assignee",
      },
      handler: (ctx) => listThreads(ctx, pageRequest(ctx.params)),
    }),

    /** Start a conversation with a contact: its first message goes out at once. inbox.write. */
    create: defineAction({
      rest: `POST ${WS}`,
      ...write,
      params: schemas.create,
      status: 201,
      result: results.thread,
      openapi: {
        tags,
        summary:
          "Start a conversation (its first message is sent at once; the contact's conversation on the channel that is not closed is reused)",
      },
      handler: (ctx) => createThread(ctx),
    }),

    /** One conversation with its messages, oldest first; a member reading it clears its unread count. inbox.read. */
    get: defineAction({
      rest: `GET ${WS}/:threadId`,
      ...read,
      params: schemas.get,
      result: results.detail,
      openapi: {
        tags,
        summary: "Get a conversation with its messages, oldest first (marks it read for members)",
      },
      handler: (ctx) => getThread(ctx),
    }),

    /** Answer the contact now (`body` or a canned response); 201 with the reply, `sent` or `failed`. inbox.write. */
    reply: defineAction({
      rest: `POST ${WS}/:threadId`,
      ...write,
      params: schemas.reply,
      status: 201,
      result: results.reply,
      openapi: {
        tags,
        summary:
          "Reply through the thread's channel at once (transactional); `status` sent or failed; the thread becomes pending",
      },
      handler: (ctx) => replyTo(ctx),
    }),

    /** Status, assignee, snooze, tags; a new assignee is notified. inbox.write. */
    update: defineAction({
      rest: `PATCH ${WS}/:threadId`,
      ...write,
      params: schemas.update,
      result: results.thread,
      openapi: {
        tags,
        summary:
          "Update a conversation (status, assigneeId, snoozedUntil, tags; `snoozed` needs snoozedUntil)",
      },
      handler: (ctx) => updateThread(ctx),
    }),

    /** Send a failed reply again (200); any other reply: 409 INVALID_STATE. inbox.write. */
    deliver: defineAction({
      rest: `POST ${WS}/:threadId/replies/:replyId/deliver`,
      ...write,
      params: schemas.deliver,
      result: results.reply,
      openapi: { tags, summary: "Send a failed reply again (409 INVALID_STATE unless it failed)" },
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const thread = found(await threads.findThread(ws, ctx.params.threadId), "Thread");
        const { row, exists } = await messages.claimFailed(ws, thread.id, ctx.params.replyId);
        if (!exists) throw notFound("Reply");
        if (!row) throw invalidState("Only a failed reply can be sent again");
        const sent = await deliver(ctx, ws, thread, row);
        await audit(
          ctx,
          "inbox.reply.redelivered",
          { type: "inbox_message", id: row.id },
          { status: sent.status },
        );
        return messages.inboxMessageView(sent);
      },
    }),

    /** A file an inbound mail carried (its type read from its bytes; one `Range` answered as a 206). inbox.read. */
    attachment: defineAction({
      rest: `GET ${WS}/:threadId/attachments/:attachmentId`,
      ...read,
      params: schemas.attachment,
      openapi: {
        tags,
        summary: "Download a file an inbound mail carried",
        responses: {
          "200": {
            description: "The file",
            content: { "*/*": { schema: { type: "string", format: "binary" } } },
          },
          "206": {
            description: "The part a `Range` header asked for",
            content: { "*/*": { schema: { type: "string", format: "binary" } } },
          },
          "416": { description: "A range past the end of the file (`Content-Range: bytes */<size>`)" },
        },
      },
      handler: (ctx) => attachmentFile(ctx),
    }),

    /** Internal (providers' inbound path): an inbound message into its conversation, once per provider message id. */
    receive: defineAction({
      params: schemas.receive,
      result: results.receive,
      handler(ctx) {
        return receive(ctx, workspaceOf(ctx), ctx.params, this.logger);
      },
    }),

    /** Internal (the providers' inbound batch): `receive` for many messages of the workspace, filed together, answers in order. */
    receiveBatch: defineAction({
      params: schemas.receiveBatch,
      result: results.receiveBatch,
      handler(ctx) {
        return receiveMany(ctx, workspaceOf(ctx), ctx.params.messages, this.logger);
      },
    }),

    /** Internal (timer, cron tick): snoozed threads whose time came open again. */
    wakeSnoozed: defineAction({
      result: results.count,
      handler: () => threads.wakeSnoozed(new Date()),
    }),

    /** Internal (timer, cron tick): waiting threads to members with room, oldest first. */
    assignWaiting: defineAction({
      result: results.count,
      handler(ctx) {
        return assignWaiting(ctx, this.logger);
      },
    }),

    /** Internal (timer, cron tick): threads left unanswered past their rule's time to the next member. */
    reassignUnanswered: defineAction({
      result: results.count,
      handler(ctx) {
        return reassignUnanswered(ctx, this.logger);
      },
    }),

    /** Internal (timer, cron tick): the stored files of deleted messages' attachments removed (migration 0101's queue). */
    sweepAttachmentRemovals: defineAction({
      result: results.count,
      handler: () => sweepAttachmentRemovals(),
    }),

    /** Internal (timer, the REPL's `queues`): the attachment-removal queue's figures, into the queue gauges. */
    queueStats: queueStatsAction(async () => [await removalQueueFigures()]),
  },
});
