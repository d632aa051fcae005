import { newId } from "../../lib/crypto";
import type { QueueFigures } from "../../lib/business-metrics";
import { Binds, database, likeEscape, queryAcrossWorkspaces } from "../../lib/database";
import { selectPage, sortOrder, type PageRequest } from "../../lib/pagination";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import { Task } from "../../models";
import { dueNotificationKey } from "./crm.rules";
import { notify } from "./notifications.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on tasks; each takes the workspace id first (the due check spans workspaces on purpose). */

export interface TaskInput {
  title?: string;
  description?: string | null;
  type?: string;
  priority?: string;
  dueAt?: Date | null;
  assigneeId?: string | null;
  contactId?: string | null;
  companyId?: string | null;
  dealId?: string | null;
}

export const TASK_FIELDS = [
  "title",
  "description",
  "type",
  "priority",
  "dueAt",
  "assigneeId",
  "contactId",
  "companyId",
  "dealId",
] as const;

/** A task's fields as a view needs them: a model instance or a listed row. */
type TaskFields = Pick<
  Task,
  | "id"
  | "title"
  | "description"
  | "type"
  | "priority"
  | "dueAt"
  | "assigneeId"
  | "contactId"
  | "companyId"
  | "dealId"
  | "completedAt"
  | "completedBy"
  | "createdBy"
  | "createdAt"
  | "updatedAt"
>;

const TASK_COLUMNS = `id, title, description, type, priority, due_at AS "dueAt", assignee_id AS "assigneeId",
  contact_id AS "contactId", company_id AS "companyId", deal_id AS "dealId", completed_at AS "completedAt",
  completed_by AS "completedBy", created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt"`;

export const taskView = (t: TaskFields, now = new Date()) => ({
  id: t.id,
  title: t.title,
  description: t.description,
  type: t.type,
  priority: t.priority,
  status: t.completedAt ? ("completed" as const) : ("open" as const),
  overdue: !t.completedAt && t.dueAt !== null && t.dueAt.getTime() < now.getTime(),
  dueAt: t.dueAt,
  assigneeId: t.assigneeId,
  contactId: t.contactId,
  companyId: t.companyId,
  dealId: t.dealId,
  completedAt: t.completedAt,
  completedBy: t.completedBy,
  createdBy: t.createdBy,
  createdAt: t.createdAt,
  updatedAt: t.updatedAt,
});
export type TaskView = ReturnType<typeof taskView>;

const SORTS = {
  dueAt: "due_at",
  createdAt: "created_at",
  updatedAt: "updated_at",
  title: "title",
  completedAt: "completed_at",
  priority: "priority",
};

export interface TaskFilters {
  search?: string;
  status?: "open" | "completed" | "overdue";
  assigneeId?: string;
  contactId?: string;
  companyId?: string;
  dealId?: string;
  type?: string;
  priority?: string;
  dueFrom?: Date;
  dueTo?: Date;
  sort?: string;
}

const FILTER_COLUMNS = {
  assigneeId: "assignee_id",
  contactId: "contact_id",
  companyId: "company_id",
  dealId: "deal_id",
  type: "type",
  priority: "priority",
} as const;

export async function listTasks(workspaceId: WorkspaceId, f: TaskFilters, page: PageRequest) {
  const b = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (f.search) where.push(`title ILIKE ${b.p(`%${likeEscape(f.search)}%`)}`);
  if (f.status === "open") where.push("completed_at IS NULL");
  if (f.status === "completed") where.push("completed_at IS NOT NULL");
  if (f.status === "overdue") where.push(`completed_at IS NULL AND due_at < ${b.p(new Date())}`);
  for (const [key, column] of Object.entries(FILTER_COLUMNS) as Array<
    [keyof typeof FILTER_COLUMNS, string]
  >) {
    if (f[key]) where.push(`${column} = ${b.p(f[key])}`);
  }
  if (f.dueFrom) where.push(`due_at >= ${b.p(f.dueFrom)}`);
  if (f.dueTo) where.push(`due_at <= ${b.p(f.dueTo)}`);
  const clause = where.join(" AND ");
  const now = new Date();
  return selectPage(
    workspaceId,
    {
      select: `SELECT ${TASK_COLUMNS} FROM tasks WHERE ${clause}`,
      orderBy: sortOrder(f.sort, SORTS, "dueAt")
        .map(([column, direction]) => `${column} ${direction}`)
        .join(", "),
      countFrom: `FROM tasks WHERE ${clause}`,
    },
    b.values,
    page,
    (t: TaskFields) => taskView(t, now),
  );
}

export const findTask = (workspaceId: WorkspaceId, taskId: string): Promise<Task | null> =>
  Task.findOne({ where: { id: taskId, workspaceId } });

export async function createTask(
  workspaceId: WorkspaceId,
  input: TaskInput & { title: string; id?: string },
  createdBy: string | null,
) {
  const task = await Task.create({
    type: "todo",
    priority: "normal",
    ...input,
    id: input.id ?? newId(),
    workspaceId,
    createdBy,
  });
  return taskView(task);
}

/**
 * Change a task; a new due date is notified again when it comes. Answers the
 * assignee before the change too; null when there is no such task.
 */
export async function updateTask(workspaceId: WorkspaceId, taskId: string, input: TaskInput) {
  const task = await findTask(workspaceId, taskId);
  if (!task) return null;
  const previousAssignee = task.assigneeId;
  const previousDue = task.dueAt?.getTime() ?? null;
  for (const [key, value] of Object.entries(input)) if (value !== undefined) task.set(key, value);
  if ((task.dueAt?.getTime() ?? null) !== previousDue) task.dueNotifiedAt = null;
  task.changed("updatedAt", true);
  await task.save();
  return { task: taskView(task), previousAssignee };
}

/** Complete (or, with `completed: false`, reopen) a task. Null: no such task. */
export async function completeTask(
  workspaceId: WorkspaceId,
  taskId: string,
  completed: boolean,
  by: string | null,
) {
  const task = await findTask(workspaceId, taskId);
  if (!task) return null;
  if (completed && !task.completedAt) {
    task.completedAt = new Date();
    task.completedBy = by;
  } else if (!completed) {
    task.completedAt = null;
    task.completedBy = null;
  }
  return taskView(await task.save());
}

export async function deleteTask(workspaceId: WorkspaceId, taskId: string): Promise<boolean> {
  return (await Task.destroy({ where: { id: taskId, workspaceId } })) > 0;
}

interface DueRow {
  id: string;
  workspaceId: WorkspaceId;
  title: string;
  dueAt: Date;
  assigneeId: string;
}

/** Due-date reminders across workspaces as a queue (lib/queue-stats.ts): assigned open tasks not yet notified. */
export async function dueReminderQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("due_at <= now()", "due_at")} FROM tasks
      WHERE completed_at IS NULL AND due_notified_at IS NULL AND assignee_id IS NOT NULL AND due_at IS NOT NULL`,
    [],
  );
  return queueFigures("task_reminders", row);
}

/**
 * One pass of the due check, safe on any number of replicas at once: each
 * batch of due, open, assigned, not yet notified tasks is claimed with
 * FOR UPDATE SKIP LOCKED, its notifications are written and the tasks marked
 * notified in the same transaction, so each due date is notified once.
 * Answers how many notifications were made.
 */
export async function notifyDueTasks(now = new Date(), batchSize = 200, maxBatches = 50): Promise<number> {
  const sequelize = await database();
  let made = 0;
  for (let batch = 0; batch < maxBatches; batch += 1) {
    const claimed = await sequelize.transaction(async (transaction) => {
      const rows = await queryAcrossWorkspaces<DueRow>(
        `SELECT id, workspace_id AS "workspaceId", title, due_at AS "dueAt", assignee_id AS "assigneeId"
           FROM tasks
          WHERE completed_at IS NULL AND due_notified_at IS NULL AND assignee_id IS NOT NULL
            AND due_at IS NOT NULL AND due_at <= $1
          ORDER BY due_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED`,
        [now, batchSize],
        transaction,
      );
      for (const row of rows) {
        const dueAt = new Date(row.dueAt);
        const created = await notify(
          row.workspaceId,
          row.assigneeId,
          {
            type: "task.due",
            title: `Task due: ${row.title}`,
            body: `The task "${row.title}" was due at ${dueAt.toISOString()}.`,
            resourceType: "task",
            resourceId: row.id,
            data: { taskId: row.id, dueAt: dueAt.toISOString() },
            dedupeKey: dueNotificationKey(row.id, dueAt, row.assigneeId),
          },
          transaction,
        );
        if (created) made += 1;
      }
      if (rows.length) {
        await queryAcrossWorkspaces(
          `UPDATE tasks SET due_notified_at = $1 WHERE id = ANY($2::text[])`,
          [now, rows.map((r) => r.id)],
          transaction,
        );
      }
      return rows.length;
    });
    if (claimed < batchSize) break;
  }
  return made;
}
