import type { Static } from "@sinclair/typebox";
import { config } from "../../lib/config";
import { found } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import * as repo from "./messages.repo";
import type { MessageView, schemas } from "./messages.schemas";
import { createMessage } from "./send";
import type { Sender } from "./sender";

/**
 * Sends made at once (`messages.sendNow`, `sendNowBatch`: inbox replies):
 * each message created and checked on its own, inserted claimed and held,
 * then those to send go to their providers as one batch of the sender (one
 * read of the workspace and contacts, one record of the sent, one health
 * report per provider) instead of one batch each.
 */

/** How long a message sent at once waits in the queue for that send before the queue may take it. */
const SEND_NOW_HOLD_MS = 60_000;

type SendNowParams = Static<typeof schemas.sendNow>;

/** A send's answer: its message as it went, or what its creation threw (that send's own). */
export type SentNow = { message: MessageView } | { error: unknown };

export async function sendNow(
  sender: Sender,
  ctx: AppContext,
  sends: SendNowParams[],
  now: Date,
): Promise<SentNow[]> {
  // Inserted claimed, held until the lease ends: should this process die first, the queue sends them then.
  const sendAt = new Date(now.getTime() + SEND_NOW_HOLD_MS).toISOString();
  const created = await Promise.all(
    sends.map(({ headers: _headers, ...params }) =>
      createMessage(ctx, { ...params, sendAt }, now, config().messageLeaseMs).then(
        (message) => ({ message }),
        (error: unknown) => ({ error }),
      ),
    ),
  );
  const sending = created.flatMap((c) =>
    "message" in c && c.message.status === "sending" ? [c.message] : [],
  );
  const headers = new Map(
    created.flatMap((c, at) =>
      "message" in c && sends[at].headers ? [[c.message.id, sends[at].headers!]] : [],
    ),
  );
  const sent = await sender.sendNow(workspaceOf(ctx), sending, headers);
  return Promise.all(
    created.map(async (c): Promise<SentNow> => {
      if (!("message" in c)) return c;
      if (c.message.status !== "sending") return { message: repo.messageView(c.message) };
      // A sent message's row comes from the statement that recorded it; any other outcome is read back.
      const row = sent.get(c.message.id) ?? found(await repo.getMessageById(c.message.id), "Message");
      return { message: repo.messageView(row) };
    }),
  );
}

/** What a batch answers for a send whose creation threw: the error's code (500 when it had none), type and message. */
export function errorAnswer(error: unknown): { code: number; type: string; message: string } {
  const err = error as { code?: unknown; type?: unknown; message?: unknown };
  return {
    code: typeof err?.code === "number" ? err.code : 500,
    type: typeof err?.type === "string" ? err.type : "INTERNAL_ERROR",
    message: typeof err?.message === "string" ? err.message : String(error),
  };
}
