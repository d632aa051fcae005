import { actorOf } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { startMembersImport } from "./externaltool/import";
import { previewMembers } from "./externaltool/preview";
import { pushContacts } from "./externaltool/push";
import { ACCESS, results, schemas } from "./integrations.schemas";

const WS = "/workspaces/:workspaceId/integrations";
const tags = ["Integrations"];
/** A remote API out of reach or failing answers 502 UPSTREAM_ERROR. */
const failures = [502];

/** Integrations with outside tools: the external marketing tool (Mailchimp Marketing API v3 wire). */
export default defineService({
  name: "integrations",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** The list's size, a sample of its members as they would import, and the field mapping. contacts.write. */
    externaltoolPreview: defineAction({
      rest: `POST ${WS}/externaltool/preview`,
      ...ACCESS,
      openapi: {
        tags,
        failures,
        summary: "Preview a list of the external tool: total, sample members, mapping",
      },
      params: schemas.preview,
      result: results.preview,
      handler(ctx) {
        return previewMembers(workspaceOf(ctx), ctx.params.listId, ctx.params.limit);
      },
    }),

    /** Import every member of the list as a job (`integrations.import`); 202 `{jobId}`. contacts.write. */
    externaltoolImport: defineAction({
      rest: `POST ${WS}/externaltool/import`,
      ...ACCESS,
      openapi: { tags, failures, summary: "Import every member of a list of the external tool (a job)" },
      params: schemas.import,
      status: 202,
      result: results.job,
      handler(ctx) {
        const { listId, tags: extraTags } = ctx.params;
        return startMembersImport(this.broker, this.logger, workspaceOf(ctx), {
          listId,
          tags: extraTags,
          createdBy: actorOf(ctx).actorId,
        });
      },
    }),

    /** Push contacts (ids, or a segment) as list members; past 1,000 a job, 202 `{jobId}`. contacts.write. */
    externaltoolContacts: defineAction({
      rest: `POST ${WS}/externaltool/contacts`,
      ...ACCESS,
      openapi: { tags, failures, summary: "Push contacts to a list of the external tool (member upsert)" },
      params: schemas.contacts,
      result: results.pushed,
      alsoAnswers: { 202: results.job },
      async handler(ctx) {
        const { contactIds, segmentId, listId } = ctx.params;
        const outcome = await pushContacts(this.broker, this.logger, workspaceOf(ctx), {
          contactIds,
          segmentId,
          listId,
          createdBy: actorOf(ctx).actorId,
        });
        if ("jobId" in outcome) ctx.meta.$statusCode = 202;
        return outcome;
      },
    }),
  },
});
