import { requires } from "../../lib/access";
import { defineAction } from "../../lib/define-service";
import { found, notFound, validationError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { referenceIssue } from "../../lib/registry";
import { workspaceOf } from "../../lib/tenancy";
import { results, schemas } from "./content.schemas";
import { completeRules, completeTrigger, triggerIssues } from "./focus-items";
import * as repo from "./focus-items.repo";
import { FOCUS_ITEM_CHANGED } from "./script.actions";

const WS = "/workspaces/:workspaceId/focus-items";
const tags = ["Focus items"];
const read = requires("forms.read");
const write = requires("forms.write");

/** A focus item as saved: trigger and rules complete and checked, its form and segment the workspace's. */
async function checked(ctx: AppContext, input: repo.FocusInput): Promise<repo.FocusInput> {
  const issues = triggerIssues(input.trigger);
  if (input.formId) {
    const issue = await referenceIssue(ctx, "formId", "forms.get", { formId: input.formId });
    if (issue) issues.push(issue);
  }
  if (input.rules.segmentId) {
    const issue = await referenceIssue(ctx, "rules.segmentId", "segments.get", {
      segmentId: input.rules.segmentId,
    });
    if (issue) issues.push(issue);
  }
  if (issues.length) throw validationError("The focus item is invalid", issues);
  return input;
}

/**
 * On-site widgets (mixed into `content`; forms.* scopes): bars, modals and
 * slide-ins with a trigger (`load`, `exit_intent`, `scroll` percent, `delay`
 * seconds) and display rules (page addresses, frequency per visitor, a segment).
 */
export const focusActions = {
  actions: {
    /** Focus items, newest first; `active`, `type`. forms.read. */
    focusList: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List focus items" },
      ...read,
      params: schemas.focusList,
      result: results.focusList,
      handler: (ctx) => {
        const { active, type } = ctx.params;
        return repo.listItems(workspaceOf(ctx), pageRequest(ctx.params), { active, type });
      },
    }),

    /** Create a focus item. forms.write. */
    focusCreate: defineAction({
      rest: `POST ${WS}`,
      openapi: { tags, summary: "Create a focus item" },
      ...write,
      params: schemas.focusCreate,
      status: 201,
      result: results.focusItem,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, ...body } = ctx.params;
        const input = await checked(ctx, {
          ...body,
          formId: body.formId ?? null,
          trigger: completeTrigger(body.trigger),
          rules: completeRules(body.rules),
        });
        const id = await repo.insertItem(ws, input);
        await ctx.broadcast(FOCUS_ITEM_CHANGED, { workspaceId: ws, focusItemId: id });
        return found(await repo.findItem(ws, id), "Focus item");
      },
    }),

    /** One focus item. forms.read. */
    focusGet: defineAction({
      rest: `GET ${WS}/:focusItemId`,
      openapi: { tags, summary: "Get a focus item" },
      ...read,
      params: schemas.focusGet,
      result: results.focusItem,
      handler: async (ctx) =>
        found(await repo.findItem(workspaceOf(ctx), ctx.params.focusItemId), "Focus item"),
    }),

    /** Change a focus item: given fields replace theirs (`trigger` and `rules` each whole). forms.write. */
    focusPatch: defineAction({
      rest: `PATCH ${WS}/:focusItemId`,
      openapi: { tags, summary: "Update a focus item (PATCH merges)" },
      ...write,
      params: schemas.focusPatch,
      result: results.focusItem,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, focusItemId, ...changes } = ctx.params;
        const {
          id: _id,
          createdAt: _c,
          updatedAt: _u,
          ...stored
        } = found(await repo.findItem(ws, focusItemId), "Focus item");
        const input = await checked(ctx, {
          ...stored,
          ...changes,
          formId: changes.formId !== undefined ? changes.formId : stored.formId,
          trigger: changes.trigger ? completeTrigger(changes.trigger) : stored.trigger,
          rules: changes.rules ? completeRules(changes.rules) : stored.rules,
        });
        if (!(await repo.updateItem(ws, focusItemId, input))) throw notFound("Focus item");
        await ctx.broadcast(FOCUS_ITEM_CHANGED, { workspaceId: ws, focusItemId });
        return found(await repo.findItem(ws, focusItemId), "Focus item");
      },
    }),

    /** Delete a focus item. forms.write. */
    focusRemove: defineAction({
      rest: `DELETE ${WS}/:focusItemId`,
      openapi: { tags, summary: "Delete a focus item" },
      ...write,
      params: schemas.focusGet,
      result: results.removed,
      async handler(ctx) {
        if (!(await repo.deleteItem(workspaceOf(ctx), ctx.params.focusItemId))) throw notFound("Focus item");
        return { success: true };
      },
    }),
  },
};
