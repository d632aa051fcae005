import { actingUserId } from "../../lib/audit";
import { newId } from "../../lib/crypto";
import { defineAction } from "../../lib/define-service";
import { fieldError, isNotFound, notFound } from "../../lib/errors";
import { idempotent } from "../../lib/idempotency";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import { sendBroadcast } from "./broadcast";
import { insertBroadcast } from "./broadcasts.repo";
import { results, schemas } from "./campaigns.schemas";
import { ACCESS, audienceOf, tags, WS } from "./campaigns.shared";

/** Broadcasts: one template to an audience, now or at `sendAt`; mixed into `campaigns`. */
export const broadcastActions = {
  actions: {
    /**
     * Send one template to a segment, a list of contacts or a filter, as a
     * job (202 `{jobId, campaignId}`; its result `{queued, suppressed,
     * skipped}`), through the send path with every check. `Idempotency-Key`
     * as on messages. campaigns.write.
     */
    broadcast: defineAction({
      rest: `POST ${WS}/broadcast`,
      openapi: {
        tags,
        summary: "Broadcast a template to a segment, contacts or a filter (a job)",
        parameters: [
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            schema: { type: "string", minLength: 1, maxLength: 255 },
            description: "Retries with the same key and body get the first answer for 24 h",
          },
        ],
      },
      ...ACCESS.write,
      params: schemas.broadcast,
      status: 202,
      result: results.broadcast,
      handler(ctx) {
        return idempotent(ctx, "campaigns.broadcast", 202, async () => {
          const p = ctx.params;
          const ws = workspaceOf(ctx);
          const audience = await audienceOf(ctx, p);
          const template = await systemCall<{ template: { channel: string } }>(ctx, ws, "templates.resolve", {
            templateId: p.templateId,
          }).catch((err: unknown) => {
            if (isNotFound(err))
              throw notFound("Template", { field: "templateId", message: `no template ${p.templateId}` });
            throw err;
          });
          if (template.template.channel !== p.channel)
            throw fieldError("templateId", `is a ${template.template.channel} template, not ${p.channel}`);
          const campaignId = newId();
          const spec = {
            channel: p.channel,
            templateId: p.templateId,
            audience,
            sendAt: p.sendAt ?? null,
            variables: p.variables ?? null,
            topic: p.topic ?? null,
            transactional: p.transactional ?? false,
          };
          await insertBroadcast(ws, campaignId, p.name, spec);
          const jobId = await sendBroadcast(
            this.broker,
            this.logger,
            { id: campaignId, workspace_id: ws, broadcast: spec },
            actingUserId(ctx),
          );
          return { jobId, campaignId };
        });
      },
    }),
  },
};
