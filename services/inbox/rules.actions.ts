import { requires } from "../../lib/access";
import type { Static } from "@sinclair/typebox";
import { audit } from "../../lib/audit";
import { uniqueViolation } from "../../lib/database";
import { defineAction, defineMixin } from "../../lib/define-service";
import { conflict, fieldError, found, notFound, validationError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { schemaIssues } from "../../lib/schema";
import { workspaceOf } from "../../lib/tenancy";
import * as autoReplies from "./auto-replies.repo";
import { hoursIssue, type BusinessHours } from "./business-hours";
import * as canned from "./canned.repo";
import { checkCannedBody } from "./canned";
import { contactMatches, membersAmong } from "./directory";
import { ConditionConfig, results, RoundRobinConfig, schemas, type RuleConfig } from "./inbox.schemas";
import * as rules from "./rules.repo";

/** Assignment rules, auto-replies and canned responses (contract-messaging 11): small lists, bare arrays. */

const WS = "/workspaces/:workspaceId/inbox";
const tags = ["Inbox"];
const read = requires("inbox.read");
const write = requires("inbox.write");

/**
 * A rule's config, checked for its type (400 naming `config.<field>`): its
 * members must be the workspace's, a condition's filter must compile.
 */
async function checkConfig(
  ctx: AppContext,
  type: "round_robin" | "condition",
  config: unknown,
): Promise<RuleConfig> {
  const schema = type === "round_robin" ? RoundRobinConfig : ConditionConfig;
  const issues = schemaIssues(schema as unknown as Record<string, unknown>, config);
  if (issues.length)
    throw validationError(
      `config: ${issues[0].field} ${issues[0].message}`,
      issues.map((i) => ({ ...i, field: i.field ? `config.${i.field}` : "config" })),
    );
  const ws = workspaceOf(ctx);
  const checked = config as RuleConfig;
  checkHours(checked.businessHours, "config.businessHours");
  const wanted =
    "memberIds" in checked
      ? [...new Set(checked.memberIds)]
      : [(checked as { assigneeId: string }).assigneeId];
  const members = new Set(await membersAmong(ctx, ws, wanted));
  const stranger = wanted.findIndex((id) => !members.has(id));
  if (stranger >= 0)
    throw fieldError(
      "memberIds" in checked ? `config.memberIds[${stranger}]` : "config.assigneeId",
      "must be the user id of a member of this workspace",
    );
  if ("memberIds" in checked) return { ...checked, memberIds: wanted };
  // The segments area compiles the filter (a 400 naming its bad node); no contact has this id.
  if (checked.filter) await contactMatches(ctx, ws, "-", checked.filter);
  return checked;
}

/** Business hours must say when (400 naming the part missing). */
function checkHours(hours: BusinessHours | null | undefined, field: string): void {
  const issue = hours ? hoursIssue(hours) : null;
  if (issue) throw fieldError(`${field}.${issue.field}`, issue.message);
}

type RuleParams = Static<typeof schemas.createRule>;

export const rulesActions = defineMixin({
  actions: {
    /** Assignment rules by priority (lowest first). inbox.read. */
    listRules: defineAction({
      rest: `GET ${WS}/assignment-rules`,
      ...read,
      params: schemas.listRules,
      result: results.rules,
      openapi: { tags, summary: "List assignment rules, lowest priority number first" },
      handler: async (ctx) => (await rules.listRules(workspaceOf(ctx))).map(rules.ruleView),
    }),

    /** A rule new threads try by priority. inbox.write. */
    createRule: defineAction({
      rest: `POST ${WS}/assignment-rules`,
      ...write,
      params: schemas.createRule,
      status: 201,
      result: results.rule,
      openapi: {
        tags,
        summary:
          "Create an assignment rule (round_robin `{memberIds, maxOpen?, reassignAfterMinutes?, businessHours?}` or condition `{channel?, keywords?, filter?, assigneeId, businessHours?}`)",
      },
      async handler(ctx) {
        const p: RuleParams = ctx.params;
        const config = await checkConfig(ctx, p.type, p.config);
        const row = await rules.insertRule(workspaceOf(ctx), {
          name: p.name,
          type: p.type,
          priority: p.priority ?? 0,
          active: p.active ?? true,
          config,
        });
        await audit(ctx, "inbox.assignment_rule.created", { type: "inbox_assignment_rule", id: row.id });
        return rules.ruleView(row);
      },
    }),

    /** Change a rule (a new config restarts its round). inbox.write. */
    updateRule: defineAction({
      rest: `PATCH ${WS}/assignment-rules/:ruleId`,
      ...write,
      params: schemas.updateRule,
      result: results.rule,
      openapi: {
        tags,
        summary: "Update an assignment rule (config is replaced whole, checked for the rule's type)",
      },
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const current = found(await rules.findRule(ws, ctx.params.ruleId), "Assignment rule");
        const config = ctx.params.config
          ? await checkConfig(ctx, current.type, ctx.params.config)
          : undefined;
        const { name, priority, active } = ctx.params;
        const row = found(
          await rules.updateRule(ws, current.id, { name, priority, active, config }),
          "Assignment rule",
        );
        await audit(ctx, "inbox.assignment_rule.updated", { type: "inbox_assignment_rule", id: row.id });
        return rules.ruleView(row);
      },
    }),

    /** Delete a rule; threads it assigned keep their assignee. inbox.write. */
    removeRule: defineAction({
      rest: `DELETE ${WS}/assignment-rules/:ruleId`,
      ...write,
      params: schemas.removeRule,
      result: results.success,
      openapi: { tags, summary: "Delete an assignment rule" },
      async handler(ctx) {
        if (!(await rules.deleteRule(workspaceOf(ctx), ctx.params.ruleId))) throw notFound("Assignment rule");
        await audit(ctx, "inbox.assignment_rule.deleted", {
          type: "inbox_assignment_rule",
          id: ctx.params.ruleId,
        });
        return { success: true as const };
      },
    }),

    /** Auto-replies. inbox.read. */
    listAutoReplies: defineAction({
      rest: `GET ${WS}/auto-replies`,
      ...read,
      params: schemas.listAutoReplies,
      result: results.autoReplies,
      openapi: { tags, summary: "List auto-replies" },
      handler: async (ctx) =>
        (await autoReplies.listAutoReplies(workspaceOf(ctx))).map(autoReplies.autoReplyView),
    }),

    /** An answer to inbound on a channel with a keyword, outside business hours; once per thread and day. inbox.write. */
    createAutoReply: defineAction({
      rest: `POST ${WS}/auto-replies`,
      ...write,
      params: schemas.createAutoReply,
      status: 201,
      result: results.autoReply,
      openapi: {
        tags,
        summary:
          "Create an auto-reply (channel null: any; keywords none: any; fires outside businessHours in the workspace's zone, null: always; once per thread and rule a day)",
      },
      async handler(ctx) {
        const { workspaceId: _ws, ...input } = ctx.params;
        checkHours(input.businessHours, "businessHours");
        const row = await autoReplies.insertAutoReply(workspaceOf(ctx), input);
        await audit(ctx, "inbox.auto_reply.created", { type: "inbox_auto_reply", id: row.id });
        return autoReplies.autoReplyView(row);
      },
    }),

    /** Change an auto-reply. inbox.write. */
    updateAutoReply: defineAction({
      rest: `PATCH ${WS}/auto-replies/:ruleId`,
      ...write,
      params: schemas.updateAutoReply,
      result: results.autoReply,
      openapi: { tags, summary: "Update an auto-reply" },
      async handler(ctx) {
        const { workspaceId: _ws, ruleId, ...input } = ctx.params;
        checkHours(input.businessHours, "businessHours");
        const row = found(await autoReplies.updateAutoReply(workspaceOf(ctx), ruleId, input), "Auto-reply");
        await audit(ctx, "inbox.auto_reply.updated", { type: "inbox_auto_reply", id: row.id });
        return autoReplies.autoReplyView(row);
      },
    }),

    /** Delete an auto-reply. inbox.write. */
    removeAutoReply: defineAction({
      rest: `DELETE ${WS}/auto-replies/:ruleId`,
      ...write,
      params: schemas.removeAutoReply,
      result: results.success,
      openapi: { tags, summary: "Delete an auto-reply" },
      async handler(ctx) {
        if (!(await autoReplies.deleteAutoReply(workspaceOf(ctx), ctx.params.ruleId)))
          throw notFound("Auto-reply");
        await audit(ctx, "inbox.auto_reply.deleted", { type: "inbox_auto_reply", id: ctx.params.ruleId });
        return { success: true as const };
      },
    }),

    /** Canned responses by shortcode. inbox.read. */
    listCanned: defineAction({
      rest: `GET ${WS}/canned-responses`,
      ...read,
      params: schemas.listCanned,
      result: results.cannedList,
      openapi: { tags, summary: "List canned responses by shortcode" },
      handler: async (ctx) => (await canned.listCanned(workspaceOf(ctx))).map(canned.cannedView),
    }),

    /** A reusable answer; `body` is Liquid over `contact.*` and `member.*`. 409 on a taken shortcode. inbox.write. */
    createCanned: defineAction({
      rest: `POST ${WS}/canned-responses`,
      ...write,
      params: schemas.createCanned,
      status: 201,
      result: results.canned,
      openapi: {
        tags,
        summary: "Create a canned response (shortcode unique: 409; body Liquid with contact.* and member.*)",
      },
      async handler(ctx) {
        const { workspaceId: _ws, ...input } = ctx.params;
        checkCannedBody(input.body);
        const row = await taken(() => canned.insertCanned(workspaceOf(ctx), input));
        await audit(ctx, "inbox.canned_response.created", { type: "inbox_canned_response", id: row.id });
        return canned.cannedView(row);
      },
    }),

    /** Change a canned response. inbox.write. */
    updateCanned: defineAction({
      rest: `PATCH ${WS}/canned-responses/:responseId`,
      ...write,
      params: schemas.updateCanned,
      result: results.canned,
      openapi: { tags, summary: "Update a canned response (409 on a taken shortcode)" },
      async handler(ctx) {
        const { workspaceId: _ws, responseId, ...input } = ctx.params;
        if (input.body !== undefined) checkCannedBody(input.body);
        const row = found(
          await taken(() => canned.updateCanned(workspaceOf(ctx), responseId, input)),
          "Canned response",
        );
        await audit(ctx, "inbox.canned_response.updated", { type: "inbox_canned_response", id: row.id });
        return canned.cannedView(row);
      },
    }),

    /** Delete a canned response. inbox.write. */
    removeCanned: defineAction({
      rest: `DELETE ${WS}/canned-responses/:responseId`,
      ...write,
      params: schemas.removeCanned,
      result: results.success,
      openapi: { tags, summary: "Delete a canned response" },
      async handler(ctx) {
        if (!(await canned.deleteCanned(workspaceOf(ctx), ctx.params.responseId)))
          throw notFound("Canned response");
        await audit(ctx, "inbox.canned_response.deleted", {
          type: "inbox_canned_response",
          id: ctx.params.responseId,
        });
        return { success: true as const };
      },
    }),
  },
});

/** A shortcode another canned response has: 409. */
async function taken<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (uniqueViolation(err)) throw conflict("A canned response with this shortcode exists");
    throw err;
  }
}
