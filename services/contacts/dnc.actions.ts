import { defineAction } from "../../lib/define-service";
import { actorOf } from "../../lib/audit";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import {
  ACCESS,
  CONTACTS_PATH,
  CONTACTS_TAGS,
  DncEntrySchema,
  results,
  schemas,
  SuccessSchema,
} from "./contacts.schemas";
import { addDnc, blockedValues, listDnc, removeDnc } from "./dnc.repo";

const WS = CONTACTS_PATH;
const tags = CONTACTS_TAGS;
const { read, write, remove } = ACCESS;

/** The contacts service's do-not-contact actions (mixed into `contacts`, so they are `contacts.dnc*`). */
export const dncActions = {
  actions: {
    /** The do-not-contact list, newest first. contacts.read. */
    dncList: defineAction({
      rest: `GET ${WS}/dnc`,
      openapi: { tags, summary: "List do-not-contact entries" },
      ...read,
      params: schemas.dncList,
      result: results.dncList,
      handler: (ctx) => listDnc(workspaceOf(ctx), ctx.params.type, pageRequest(ctx.params)),
    }),

    /** Add an email or phone to the do-not-contact list (409 when present). contacts.write. */
    dncAdd: defineAction({
      rest: `POST ${WS}/dnc`,
      openapi: { tags, summary: "Add a do-not-contact entry (email or phone)" },
      ...write,
      params: schemas.dncCreate,
      status: 201,
      result: DncEntrySchema,
      handler: (ctx) =>
        addDnc(
          workspaceOf(ctx),
          ctx.params.type,
          ctx.params.value,
          ctx.params.reason ?? null,
          actorOf(ctx).actorId,
        ),
    }),

    /** Remove `?type=&value=` from the do-not-contact list. contacts.delete. */
    dncRemove: defineAction({
      rest: `DELETE ${WS}/dnc`,
      openapi: { tags, summary: "Remove a do-not-contact entry" },
      ...remove,
      params: schemas.dncDelete,
      result: SuccessSchema,
      async handler(ctx) {
        await removeDnc(workspaceOf(ctx), ctx.params.type, ctx.params.value);
        return { success: true as const };
      },
    }),

    /** Internal (every sender, before a send): which of `emails`/`phones` are on the do-not-contact list. */
    dncBlocked: defineAction({
      params: schemas.dncBlocked,
      handler: (ctx) => blockedValues(workspaceOf(ctx), ctx.params.emails ?? [], ctx.params.phones ?? []),
    }),
  },
};
