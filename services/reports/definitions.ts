import type { ServiceBroker } from "moleculer";
import { validationError, type FieldIssue } from "../../lib/errors";
import { checkedParams } from "./answers";
import { cronIssue, nextRunAfter, zoneIssue } from "./due-times";
import type { ReportInput, ScheduleInput, ScheduleView } from "./reports.schemas";
import type { ScheduleWrite } from "./reports.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** A report's and a schedule's definition, checked and completed before they are stored. */

/** A report as stored: its params as its answer takes them (400 naming the field otherwise). */
export function reportInput(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  input: { name: string; endpoint: string; params?: Record<string, unknown> },
): ReportInput {
  return {
    name: input.name,
    endpoint: input.endpoint,
    params: checkedParams(broker, workspaceId, input.endpoint, input.params ?? {}),
  };
}

/** A schedule as stored, with its next run after `now` (null while inactive); bad cron or zone: 400. */
export function scheduleWrite(input: ScheduleInput, now: Date): ScheduleWrite {
  const issues = [cronIssue(input.cron), zoneIssue(input.timezone)].filter((i): i is FieldIssue => !!i);
  if (issues.length) throw validationError(`${issues[0].field} ${issues[0].message}`, issues);
  const nextRunAt = input.active ? nextRunAfter(input.cron, input.timezone, now) : null;
  if (input.active && !nextRunAt)
    throw validationError("cron never comes due", [{ field: "cron", message: "never comes due" }]);
  return { ...input, nextRunAt };
}

/** A PATCH's fields over the schedule's own. */
export function scheduleChanges(current: ScheduleView, changes: Partial<ScheduleInput>): ScheduleInput {
  return {
    cron: changes.cron ?? current.cron,
    timezone: changes.timezone ?? current.timezone,
    recipients: changes.recipients ?? current.recipients,
    active: changes.active ?? current.active,
  };
}
