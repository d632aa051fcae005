import type { Static } from "@sinclair/typebox";
import { actingUserId, audit } from "../../lib/audit";
import { uniqueViolation } from "../../lib/database";
import { conflict, fieldError, found, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import type { PageRequest } from "../../lib/pagination";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { notifyAssigned } from "./assignment";
import { findCanned } from "./canned.repo";
import { renderCanned } from "./canned";
import { contactBriefs, membersAmong } from "./directory";
import type { schemas, ThreadView } from "./inbox.schemas";
import * as messages from "./inbox-messages.repo";
import { answer } from "./replies";
import * as threads from "./threads.repo";
import type { ThreadRow } from "./threads.repo";

/** The thread actions' logic: each takes the action's context and answers its result. */

type P<K extends keyof typeof schemas> = Static<(typeof schemas)[K]>;

async function views(ctx: AppContext, ws: WorkspaceId, rows: ThreadRow[]): Promise<ThreadView[]> {
  const contacts = await contactBriefs(
    ctx,
    ws,
    rows.map((r) => r.contact_id),
  );
  return rows.map((row) => threads.threadView(row, contacts.get(row.contact_id) ?? null));
}

export async function listThreads(ctx: AppContext<P<"list">>, page: PageRequest) {
  const ws = workspaceOf(ctx);
  const me = actingUserId(ctx);
  const { status, channel, contactId, search } = ctx.params;
  const assigneeId = ctx.params.assigneeId === "me" ? (me ?? "") : ctx.params.assigneeId;
  const [listed, byAssignee] = await Promise.all([
    threads.listThreads(ws, { status, channel, assigneeId, contactId, search }, page),
    threads.unreadByAssignee(ws),
  ]);
  const mine = byAssignee.find((u) => me !== null && u.assigneeId === me);
  return {
    data: await views(ctx, ws, listed.data),
    pagination: listed.pagination,
    unread: {
      threads: byAssignee.reduce((n, u) => n + u.threads, 0),
      messages: byAssignee.reduce((n, u) => n + u.messages, 0),
      mine: { threads: mine?.threads ?? 0, messages: mine?.messages ?? 0 },
      byAssignee,
    },
  };
}

export async function getThread(ctx: AppContext<P<"get">>) {
  const ws = workspaceOf(ctx);
  let row = found(await threads.findThread(ws, ctx.params.threadId), "Thread");
  // A member who opens the conversation has read it; an API client reading it has not.
  if (actingUserId(ctx) && row.unread > 0) {
    await threads.markRead(ws, row.id);
    row = { ...row, unread: 0 };
  }
  const [[view], history] = await Promise.all([views(ctx, ws, [row]), messages.threadMessages(ws, row.id)]);
  return { ...view, messages: history.map(messages.inboxMessageView) };
}

/** Start (or continue) the contact's conversation on the channel with a message sent at once. */
export async function createThread(ctx: AppContext<P<"create">>) {
  const ws = workspaceOf(ctx);
  const { contactId, channel, subject, body } = ctx.params;
  const known = await systemCall<string[]>(ctx, ws, "contacts.existingIds", { ids: [contactId] });
  if (!known.length) throw notFound("Contact", { field: "contactId", message: `no contact ${contactId}` });
  const thread = await openThread(ws, contactId, channel, subject ?? null);
  await answer(ctx, ws, thread, body, { id: actingUserId(ctx) });
  const current = found(await threads.findThread(ws, thread.id), "Thread");
  await audit(ctx, "inbox.thread.created", { type: "inbox_thread", id: thread.id }, { channel, contactId });
  return (await views(ctx, ws, [current]))[0];
}

/** The contact's conversation on the channel that is not closed, else a new one (a race lands in the same one). */
async function openThread(
  ws: WorkspaceId,
  contactId: string,
  channel: ThreadRow["channel"],
  subject: string | null,
) {
  const existing = await threads.openThreadOf(ws, contactId, channel);
  if (existing) return existing;
  try {
    return await threads.insertThread(ws, { contactId, channel, subject, originMessageId: null });
  } catch (err) {
    if (!uniqueViolation(err)) throw err;
    return found(await threads.openThreadOf(ws, contactId, channel), "Thread");
  }
}

export async function replyTo(ctx: AppContext<P<"reply">>) {
  const ws = workspaceOf(ctx);
  const { body, cannedResponseId } = ctx.params;
  if (!body === !cannedResponseId) throw fieldError("body", "or cannedResponseId is required (one of them)");
  const thread = found(await threads.findThread(ws, ctx.params.threadId), "Thread");
  const author = actingUserId(ctx);
  let text = body ?? "";
  if (cannedResponseId) {
    const canned = await findCanned(ws, cannedResponseId);
    if (!canned)
      throw notFound("Canned response", {
        field: "cannedResponseId",
        message: `no canned response ${cannedResponseId}`,
      });
    if (canned.channel && canned.channel !== thread.channel)
      throw fieldError("cannedResponseId", `is for ${canned.channel}, not ${thread.channel}`);
    text = await renderCanned(ctx, ws, canned.body, thread.contact_id, author);
    if (!text.trim()) throw fieldError("cannedResponseId", "renders empty for this contact");
  }
  const reply = await answer(ctx, ws, thread, text, { id: author });
  await audit(
    ctx,
    "inbox.reply.sent",
    { type: "inbox_thread", id: thread.id },
    { replyId: reply.id, status: reply.status },
  );
  return messages.inboxMessageView(reply);
}

export async function updateThread(ctx: AppContext<P<"update">>) {
  const ws = workspaceOf(ctx);
  const { status, assigneeId, tags } = ctx.params;
  const snoozedUntil =
    ctx.params.snoozedUntil === undefined
      ? undefined
      : ctx.params.snoozedUntil
        ? new Date(ctx.params.snoozedUntil)
        : null;
  if (status === "snoozed" && !snoozedUntil)
    throw fieldError("snoozedUntil", "is required to snooze a thread");
  if (snoozedUntil && snoozedUntil.getTime() <= Date.now())
    throw fieldError("snoozedUntil", "must be in the future");
  if (snoozedUntil && status !== undefined && status !== "snoozed")
    throw fieldError("snoozedUntil", "is only for status snoozed");
  if (assigneeId && !(await membersAmong(ctx, ws, [assigneeId])).length)
    throw fieldError("assigneeId", "must be the user id of a member of this workspace");
  const current = found(await threads.findThread(ws, ctx.params.threadId), "Thread");
  if (snoozedUntil && status === undefined && current.status !== "snoozed")
    throw fieldError("status", "must be snoozed to set snoozedUntil");
  if (snoozedUntil === null && status === undefined && current.status === "snoozed")
    throw fieldError(
      "snoozedUntil",
      "is required while the thread is snoozed (set another status to wake it)",
    );
  let changed;
  try {
    changed = await threads.updateThread(ws, current.id, {
      status,
      assigneeId,
      tags,
      // Leaving snoozed forgets the time it would wake.
      snoozedUntil: status !== undefined && status !== "snoozed" ? null : snoozedUntil,
    });
  } catch (err) {
    if (uniqueViolation(err))
      throw conflict(
        "The contact has another conversation on this channel that is not closed; close it first",
      );
    throw err;
  }
  const { thread, previousAssignee } = found(changed, "Thread");
  if (
    thread.assignee_id &&
    thread.assignee_id !== previousAssignee &&
    thread.assignee_id !== actingUserId(ctx)
  )
    await notifyAssigned(ctx, ws, thread);
  await audit(
    ctx,
    "inbox.thread.updated",
    { type: "inbox_thread", id: thread.id },
    {
      fields: Object.keys(ctx.params).filter((k) => !["workspaceId", "threadId"].includes(k)),
    },
  );
  return (await views(ctx, ws, [thread]))[0];
}
