import type { ServiceSchema } from "moleculer";
import { audit } from "../../lib/audit";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Task } from "../../models";
import { answers, pageOf, SuccessSchema, TaskSchema } from "./crm.openapi";
import { schemas } from "./crm.schemas";
import { actorUserId, assertMember, assertReferences, sentFields } from "./crm.shared";
import { notify } from "./notifications.repo";
import * as repo from "./tasks.repo";

/** Validated params arrive typed by the schema; handlers read them through this alias. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const openapi = (summary: string, responses: Record<string, unknown>) => ({
  tags: ["Tasks"],
  summary,
  responses,
});

/** Assignee must be a member; contact, company and deal must be of this workspace (404 otherwise). */
async function checkLinks(ctx: Ctx, workspaceId: string) {
  await assertMember(ctx, workspaceId, ctx.params.assigneeId, "assigneeId");
  const { contactId, companyId, dealId } = ctx.params;
  await assertReferences(workspaceId, { contactId, companyId, dealId });
}

/** The new assignee hears of the task, unless they assigned it to themselves. */
async function notifyAssignee(ctx: Ctx, workspaceId: string, task: repo.TaskView) {
  const actor = actorUserId(ctx);
  if (!task.assigneeId || task.assigneeId === actor) return;
  await notify(workspaceId, task.assigneeId, {
    type: "task.assigned",
    title: `New task: ${task.title}`,
    body: task.dueAt ? `Due ${task.dueAt.toISOString()}.` : null,
    resourceType: "task",
    resourceId: task.id,
    data: { taskId: task.id, dueAt: task.dueAt, assignedBy: actor },
  });
}

/** Tasks: due dates, an assignee (a member), links to a contact, company or deal, completion. contacts.* scopes. */
const TasksService: ServiceSchema = {
  name: "tasks",
  mixins: [DbMixin(Task)],
  settings: { rest: "/" },

  actions: {
    /** Tasks, paginated, soonest due first; `assigneeId=me` for the caller's own. contacts.read. */
    list: {
      rest: "GET /workspaces/:workspaceId/tasks",
      auth: "any",
      permission: "contacts.read",
      params: schemas.tasks.list,
      openapi: openapi(
        "List tasks (status open|completed|overdue, assigneeId (or `me`), contactId, companyId, dealId, type, priority, due range, search by title; sort dueAt (default), createdAt, updatedAt, title, completedAt, priority)",
        answers(pageOf(TaskSchema)),
      ),
      handler(ctx: Ctx) {
        const filters = { ...ctx.params };
        if (filters.assigneeId === "me") filters.assigneeId = actorUserId(ctx) ?? "";
        return repo.listTasks(workspaceOf(ctx), filters, pageRequest(ctx.params));
      },
    },

    /** One task. contacts.read. */
    get: {
      rest: "GET /workspaces/:workspaceId/tasks/:taskId",
      auth: "any",
      permission: "contacts.read",
      params: schemas.tasks.get,
      openapi: openapi("Get a task", answers(TaskSchema)),
      handler: async (ctx: Ctx) => repo.taskView(await repo.findTask(workspaceOf(ctx), ctx.params.taskId)),
    },

    /** Create a task; its assignee is notified. contacts.write. */
    create: {
      rest: "POST /workspaces/:workspaceId/tasks",
      auth: "any",
      permission: "contacts.write",
      params: schemas.tasks.create,
      openapi: openapi(
        "Create a task (assigneeId: a member's user id; the assignee gets a task.assigned notification)",
        answers(TaskSchema, 201),
      ),
      async handler(ctx: Ctx) {
        const workspaceId = workspaceOf(ctx);
        await checkLinks(ctx, workspaceId);
        const task = await repo.createTask(
          workspaceId,
          ctx.params as repo.TaskInput & { title: string },
          actorUserId(ctx),
        );
        await notifyAssignee(ctx, workspaceId, task);
        await audit(
          ctx,
          "task.created",
          { type: "task", id: task.id },
          { title: task.title, assigneeId: task.assigneeId },
        );
        ctx.meta.$statusCode = 201;
        return task;
      },
    },

    /** Change a task; a new assignee is notified, a new due date is notified again when due. contacts.write. */
    update: {
      rest: "PATCH /workspaces/:workspaceId/tasks/:taskId",
      auth: "any",
      permission: "contacts.write",
      params: schemas.tasks.update,
      openapi: openapi(
        "Update a task (a new assignee gets a task.assigned notification; a changed due date is notified again)",
        answers(TaskSchema),
      ),
      async handler(ctx: Ctx) {
        const workspaceId = workspaceOf(ctx);
        await checkLinks(ctx, workspaceId);
        const { task, previousAssignee } = await repo.updateTask(workspaceId, ctx.params.taskId, ctx.params);
        if (task.assigneeId !== previousAssignee) await notifyAssignee(ctx, workspaceId, task);
        await audit(
          ctx,
          "task.updated",
          { type: "task", id: task.id },
          { fields: sentFields(ctx.params, repo.TASK_FIELDS) },
        );
        return task;
      },
    },

    /** Mark a task completed (or reopen it with `completed: false`). contacts.write. */
    complete: {
      rest: "PATCH /workspaces/:workspaceId/tasks/:taskId/complete",
      auth: "any",
      permission: "contacts.write",
      params: schemas.tasks.complete,
      openapi: openapi("Complete a task (body `{completed: false}` reopens it)", answers(TaskSchema)),
      async handler(ctx: Ctx) {
        const completed = ctx.params.completed !== false;
        const task = await repo.completeTask(
          workspaceOf(ctx),
          ctx.params.taskId,
          completed,
          actorUserId(ctx),
        );
        await audit(
          ctx,
          completed ? "task.completed" : "task.reopened",
          { type: "task", id: task.id },
          { title: task.title },
        );
        return task;
      },
    },

    /** Delete a task. contacts.delete. */
    remove: {
      rest: "DELETE /workspaces/:workspaceId/tasks/:taskId",
      auth: "any",
      permission: "contacts.delete",
      params: schemas.tasks.remove,
      openapi: openapi("Delete a task", answers(SuccessSchema)),
      async handler(ctx: Ctx) {
        await repo.deleteTask(workspaceOf(ctx), ctx.params.taskId);
        await audit(ctx, "task.deleted", { type: "task", id: ctx.params.taskId });
        return { success: true };
      },
    },
  },
};

export default TasksService;
