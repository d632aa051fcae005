import type { LoggerInstance, ServiceBroker } from "moleculer";
import { found } from "../../lib/errors";
import { startJob } from "../../lib/jobs";
import { systemCall } from "../../lib/system-call";
import { runAnswer } from "./answers";
import { csvText, rowsOf } from "./csv";
import * as repo from "./reports.repo";

/**
 * A schedule's run as a `reports.deliver` job: the report's answer is run
 * now, rendered as its CSV and mailed to each recipient through the one send
 * path (`messages.create`, transactional: a report asked for is no
 * marketing), the CSV as the mail's body (the send path carries no
 * attachments). The job's result names each recipient's message, or why it
 * was refused; the messages follow the send queue as any other.
 */

export interface Delivery {
  workspaceId: string;
  scheduleId: string;
  reportId: string;
  recipients: string[];
  createdBy?: string | null;
}

export interface DeliveryResult {
  reportId: string;
  scheduleId: string;
  rows: number;
  messages: Array<{ to: string; messageId: string | null; status: string; error: string | null }>;
}

const html = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );

/** Liquid renders every text of a message; the report's cells are data, never template. */
const literal = (text: string) => `{% raw %}${text.replaceAll("{% endraw %}", "{ % endraw % }")}{% endraw %}`;

/** The mail of a report run: its name and time, then the CSV. */
export function reportMail(name: string, ranAt: Date, csv: string) {
  const heading = `${name}, run at ${ranAt.toISOString()}`;
  return {
    subject: literal(`Report: ${name}`),
    text: literal(`${heading}\n\n${csv}`),
    html: literal(`<p>${html(heading)}</p><pre>${html(csv)}</pre>`),
  };
}

/** Start the delivery job; answers its id at once. */
export async function startDelivery(
  broker: ServiceBroker,
  logger: LoggerInstance,
  delivery: Delivery,
): Promise<string> {
  const { workspaceId, scheduleId, reportId, recipients } = delivery;
  const { jobId } = await startJob(
    {
      workspaceId,
      type: "reports.deliver",
      createdBy: delivery.createdBy ?? null,
      total: recipients.length + 1,
    },
    async (progress): Promise<DeliveryResult> => {
      const report = found(await repo.getReport(workspaceId, reportId), "Report");
      const ranAt = new Date();
      const result = await runAnswer(broker, workspaceId, report.endpoint, report.params);
      await repo.markReportRun(workspaceId, reportId, ranAt);
      const content = reportMail(report.name, ranAt, await csvText(result));
      await progress(1);
      const messages: DeliveryResult["messages"] = [];
      for (const to of recipients) {
        try {
          const message = await systemCall<{ id: string; status: string }>(
            broker,
            workspaceId,
            "messages.create",
            {
              workspaceId,
              to,
              channel: "email",
              content,
              transactional: true,
            },
          );
          messages.push({ to, messageId: message.id, status: message.status, error: null });
        } catch (err) {
          messages.push({ to, messageId: null, status: "refused", error: (err as Error).message });
        }
        await progress(messages.length + 1);
      }
      await repo.markScheduleRun(workspaceId, scheduleId, ranAt);
      return { reportId, scheduleId, rows: rowsOf(result).length, messages };
    },
    (err) => logger.warn(`Report schedule ${scheduleId} failed to deliver`, err),
  );
  return jobId;
}
