import type { LoggerInstance, ServiceBroker } from "moleculer";
import { found } from "../../lib/errors";
import { startJob, startQueuedJobs, type ProgressFn } from "../../lib/jobs";
import { systemCall } from "../../lib/system-call";
import { runAnswer } from "./answers";
import { csvText, rowsOf } from "./csv";
import * as repo from "./reports.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * A schedule's run as a `reports.deliver` job: the report's answer is run
 * now, rendered as its CSV and mailed to each recipient through the one send
 * path (`messages.create`, transactional: a report asked for is no
 * marketing), the CSV attached. The job's result names each recipient's
 * message, or why it was refused; the messages follow the send queue as any
 * other.
 */

export interface Delivery {
  workspaceId: WorkspaceId;
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

/**
 * The mail of a report run: its name and time, the CSV attached. The name is
 * the user's words: it reaches the mail as a variable, never as template text.
 */
export function reportMail(report: { id: string; name: string }, ranAt: Date, csv: string, rows: number) {
  const filename = `report-${report.id}.csv`;
  const summary = `run at ${ranAt.toISOString()}: ${rows} row${rows === 1 ? "" : "s"} in ${filename}`;
  return {
    content: {
      subject: "Report: {{ report.name }}",
      text: "{{ report.name }}, {{ report.summary }}.",
      html: "<p>{{ report.name | escape }}, {{ report.summary | escape }}.</p>",
      attachments: [
        { filename, contentType: "text/csv", content: Buffer.from(csv, "utf8").toString("base64") },
      ],
    },
    variables: { report: { name: report.name, summary } },
  };
}

/** Start the delivery job (a run on demand); answers its id at once. */
export async function startDelivery(
  broker: ServiceBroker,
  logger: LoggerInstance,
  delivery: Delivery,
): Promise<string> {
  const { workspaceId, recipients } = delivery;
  const { jobId } = await startJob(
    {
      workspaceId,
      type: repo.DELIVERY_JOB,
      createdBy: delivery.createdBy ?? null,
      total: repo.deliverySteps(recipients),
    },
    (progress) => deliver(broker, delivery, progress),
    (err) => logger.warn(`Report schedule ${delivery.scheduleId} failed to deliver`, err),
  );
  return jobId;
}

/**
 * Start up to `limit` queued deliveries (the claimed runs: this pass's, and
 * any a process claimed but did not live to start), each on one replica.
 */
export async function startQueuedDeliveries(
  broker: ServiceBroker,
  logger: LoggerInstance,
  limit: number,
): Promise<string[]> {
  const started = await startQueuedJobs<repo.DeliveryInput>(
    repo.DELIVERY_JOB,
    limit,
    ({ workspaceId, input }, progress) => deliver(broker, { workspaceId, ...input }, progress),
    ({ input }, err) => logger.warn(`Report schedule ${input.scheduleId} failed to deliver`, err),
  );
  return started.map((job) => job.jobId);
}

/** The delivery's work: the report run, its CSV mailed to each recipient. */
async function deliver(
  broker: ServiceBroker,
  { workspaceId, scheduleId, reportId, recipients }: Delivery,
  progress: ProgressFn,
): Promise<DeliveryResult> {
  const report = found(await repo.getReport(workspaceId, reportId), "Report");
  const ranAt = new Date();
  const result = await runAnswer(broker, workspaceId, report.endpoint, report.params);
  await repo.markReportRun(workspaceId, reportId, ranAt);
  const rows = rowsOf(result).length;
  const mail = reportMail(report, ranAt, await csvText(result), rows);
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
          ...mail,
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
  return { reportId, scheduleId, rows, messages };
}
