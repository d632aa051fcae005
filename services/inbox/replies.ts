import { Errors } from "moleculer";
import { MicroBatcher } from "../../lib/batcher";
import { LISTED_PROVIDER_CHANNELS } from "../../lib/channels";
import { systemCall } from "../../lib/system-call";
import { type Caller } from "./directory";
import * as messages from "./inbox-messages.repo";
import type { InboxMessageRow, SendOutcome } from "./inbox-messages.repo";
import { replyContent, replyHeaders } from "./matching";
import type { ThreadRow } from "./threads.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Answers go out at once through the one send path (`messages.sendNow`:
 * checks, rendering, the channel's provider), transactional, and show how
 * it went (`sent` or `failed`, with the error); a failed one may be sent
 * again (`deliver`). Email answers carry In-Reply-To and References of the
 * contact's last message and go through the provider it came in by.
 */

/** What `messages.sendNow` answers that an answer keeps. */
interface SentMessage {
  id: string;
  status: string;
  reason: string | null;
  error: string | null;
  providerId: string | null;
  providerMessageId: string | null;
}

/** Channels whose sends may name their provider, those with a list of them (the others go through their channel's one). */
const NAMED_PROVIDER_CHANNELS = new Set<string>(LISTED_PROVIDER_CHANNELS);

/** The contact's message an answer answers: the provider it came in by and the mail's ids. */
export type Answered = Pick<InboxMessageRow, "provider_id" | "provider_message_id" | "refs">;

/** Send (or send again) an outbound message of the thread; answers it with its outcome. */
export async function deliver(
  from: Caller,
  ws: WorkspaceId,
  thread: ThreadRow,
  row: InboxMessageRow,
): Promise<InboxMessageRow> {
  const outcome = await send(from, ws, thread, row, await messages.lastInbound(ws, thread.id));
  return messages.recordOutcome(ws, row.id, outcome);
}

/** A send asked of `messages.sendNow`, with who asks it. */
interface NowSend {
  from: Caller;
  ws: WorkspaceId;
  params: Record<string, unknown>;
}

/** What `messages.sendNowBatch` answers for a send, or what its call threw. */
type NowSent =
  { message: SentMessage } | { error: { code: number; type: string; message: string } } | { thrown: unknown };

/**
 * Answers sent at the same time (the auto-replies of an inbound batch) go
 * together, one `messages.sendNowBatch` per workspace: one send batch for
 * them all instead of one each. A call that fails fails each of its sends,
 * never tried again alone (their messages may exist already).
 */
const nowSender = new MicroBatcher(
  async (items: NowSend[]): Promise<NowSent[]> => {
    const answers: NowSent[] = new Array(items.length);
    const byWorkspace = new Map<WorkspaceId, number[]>();
    items.forEach((item, at) => byWorkspace.set(item.ws, [...(byWorkspace.get(item.ws) ?? []), at]));
    await Promise.all(
      [...byWorkspace].map(async ([ws, ats]) => {
        try {
          const sent = await systemCall<NowSent[]>(items[ats[0]].from, ws, "messages.sendNowBatch", {
            sends: ats.map((at) => items[at].params),
          });
          ats.forEach((at, k) => (answers[at] = sent[k]));
        } catch (thrown) {
          for (const at of ats) answers[at] = { thrown };
        }
      }),
    );
    return answers;
  },
  // The sends' batch limit (messages' `sendNowBatch`); a second lane sends while the first waits on providers.
  { maxBatch: 100, lanes: 2 },
);

/** One send made at once, with the others asked at the same time; throws what `messages.sendNow` would throw. */
async function sendNow(from: Caller, ws: WorkspaceId, params: Record<string, unknown>): Promise<SentMessage> {
  const answer = await nowSender.add({ from, ws, params });
  if ("thrown" in answer) throw answer.thrown;
  if ("error" in answer)
    throw new Errors.MoleculerError(answer.error.message, answer.error.code, answer.error.type);
  return answer.message;
}

/** Send an outbound message through the one send path; answers how it went. */
async function send(
  from: Caller,
  ws: WorkspaceId,
  thread: ThreadRow,
  row: InboxMessageRow,
  answered: Answered | null,
): Promise<SendOutcome> {
  const providerId = NAMED_PROVIDER_CHANNELS.has(thread.channel) ? answered?.provider_id : null;
  try {
    const sent = await sendNow(from, ws, {
      contactId: thread.contact_id,
      channel: thread.channel,
      content: replyContent(thread.channel, row.body, thread.subject),
      transactional: true,
      ...(providerId ? { providerId } : {}),
      ...(thread.channel === "email" && answered
        ? { headers: replyHeaders({ providerMessageId: answered.provider_message_id, refs: answered.refs }) }
        : {}),
    });
    const ok = sent.status === "sent" || sent.status === "delivered";
    return {
      status: ok ? "sent" : "failed",
      error: ok
        ? null
        : (sent.error ?? (sent.reason ? `suppressed: ${sent.reason}` : `message ${sent.status}`)),
      messageId: sent.id,
      providerId: sent.providerId,
      providerMessageId: sent.providerMessageId,
    };
  } catch (err) {
    // A send refused before it was made (no address on the channel, a provider gone): the answer failed.
    if (typeof (err as { code?: unknown }).code !== "number" || (err as { code: number }).code >= 500)
      throw err;
    return {
      status: "failed",
      error: (err as Error).message,
      messageId: null,
      providerId: null,
      providerMessageId: null,
    };
  }
}

/**
 * A new answer in the thread: a member's or an API client's (the thread
 * then waits on the contact, `pending`, and is read) or an auto-reply's
 * (`auto`: the thread still waits for a person).
 */
export async function answer(
  from: Caller,
  ws: WorkspaceId,
  thread: ThreadRow,
  body: string,
  author: { id: string | null },
): Promise<InboxMessageRow> {
  const row = await messages.insertOutbound(ws, thread.id, body, author.id);
  return sendAnswer(from, ws, thread, row, true, await messages.lastInbound(ws, thread.id));
}

/** Send a stored answer to `answered`; how it went and the thread's new state are written in one statement. */
export async function sendAnswer(
  from: Caller,
  ws: WorkspaceId,
  thread: ThreadRow,
  row: InboxMessageRow,
  byMember: boolean,
  answered: Answered | null,
): Promise<InboxMessageRow> {
  const outcome = await send(from, ws, thread, row, answered);
  return messages.recordOutcome(ws, row.id, outcome, { threadId: thread.id, byMember });
}
