import { requires } from "../../lib/access";
import { defineAction } from "../../lib/define-service";
import type { AppContext } from "../../lib/moleculer-types";
import { validationError } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { validateFilter } from "../segments/filter-schema";
import { results, schemas } from "./content.schemas";
import { contentFor } from "./dynamic";
import * as repo from "./dynamic-content.repo";

const read = requires("forms.read");
const write = requires("forms.write");

const WS = "/workspaces/:workspaceId/dynamic-content";

/** Each contact's content of the named slots; `null` is an anonymous visitor, who gets each slot's default. */
export async function slotsFor(
  ctx: AppContext,
  ws: WorkspaceId,
  contactIds: Array<string | null>,
  slots: string[],
): Promise<Record<string, Record<string, string>>> {
  const defined = slots.length ? await repo.slotsNamed(ws, slots) : [];
  const canMatch = isServiceAvailable(ctx.broker, "segments");
  const ids = contactIds.map((id) => id ?? "");
  return contentFor(defined, ids, async (filter, undecided) => {
    const known = undecided.filter(Boolean);
    if (!canMatch || !known.length) return [];
    const { contactIds: matched } = await systemCall<{ contactIds: string[] }>(
      ctx,
      ws,
      "segments.matchingContacts",
      {
        contactIds: known,
        filter,
      },
    );
    return matched;
  });
}
const tags = ["Dynamic content"];

/** Dynamic content slots (mixed into `content`; forms.* scopes): variants chosen per contact by a segment filter. */
export const dynamicActions = {
  actions: {
    /** Slots by name; `search` (name or slot). forms.read. */
    dynamicList: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List dynamic content slots" },
      ...read,
      params: schemas.dynamicList,
      result: results.dynamicList,
      handler: (ctx) => repo.listSlots(workspaceOf(ctx), pageRequest(ctx.params), ctx.params.search),
    }),

    /** Create a slot (201) or replace the one of that `slot` (200); each variant's filter checked with its path. forms.write. */
    dynamicUpsert: defineAction({
      rest: `POST ${WS}`,
      openapi: {
        tags,
        summary: "Create or replace a dynamic content slot (by slot)",
        description:
          "`variants` in order: the first whose `filter` (the segments filter language) matches the contact renders, " +
          'else `defaultContent`; templates draw it with `{% dynamic "<slot>" %}`.',
      },
      ...write,
      params: schemas.dynamicUpsert,
      status: 201,
      alsoAnswers: { 200: results.dynamic },
      result: results.dynamic,
      async handler(ctx) {
        const { workspaceId: _path, ...input } = ctx.params;
        const issues = input.variants.flatMap(
          (v, i) => validateFilter(v.filter, `variants[${i}].filter`).issues,
        );
        if (issues.length) throw validationError("A variant's filter is invalid", issues);
        const { slot, created } = await repo.upsertSlot(workspaceOf(ctx), input);
        if (!created) ctx.meta.$statusCode = 200;
        return slot;
      },
    }),

    /** Internal (the send path, previews, the website script): each contact's content of the named slots. */
    dynamicFor: defineAction({
      params: schemas.dynamicFor,
      result: results.dynamicFor,
      handler: (ctx) => slotsFor(ctx, workspaceOf(ctx), ctx.params.contactIds, ctx.params.slots),
    }),
  },
};
