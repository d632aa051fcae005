import { requires } from "../../lib/access";
import { actingUserId, audit } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { found, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { results, schemas, SuccessSchema, TaskSchema } from "./crm.schemas";
import { asDate, assertMember, assertReferences, sentFields } from "./crm.shared";
import { notify } from "./notifications.repo";
import * as repo from "./tasks.repo";

const remove = requires("contacts.delete");
const read = requires("contacts.read");
const write = requires("contacts.write");

const openapi = (summary: string) => ({ tags: ["Tasks"], summary });

/** Assignee must be a member; contact, company and deal must be of this workspace (404 otherwise). */
type Links = {
  assigneeId?: string | null;
  contactId?: string | null;
  companyId?: string | null;
  dealId?: string | null;
};
async function checkLinks(ctx: AppContext<Links>, workspaceId: WorkspaceId) {
  await assertMember(ctx, workspaceId, ctx.params.assigneeId, "assigneeId");
  const { contactId, companyId, dealId } = ctx.params;
  await assertReferences(ctx, workspaceId, { contactId, companyId, dealId });
}

/** The new assignee hears of the task, unless they assigned it to themselves. */
async function notifyAssignee(ctx: AppContext<object>, workspaceId: WorkspaceId, task: repo.TaskView) {
  const actor = actingUserId(ctx);
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
export default defineService({
  name: "tasks",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** Tasks, paginated, soonest due first; `assigneeId=me` for the caller's own. contacts.read. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/tasks",
      ...read,
      params: schemas.tasks.list,
      result: results.tasks,
      openapi: openapi(
        "List tasks (status open|completed|overdue, assigneeId (or `me`), contactId, companyId, dealId, type, priority, due range, search by title; sort dueAt (default), createdAt, updatedAt, title, completedAt, priority)",
      ),
      handler(ctx) {
        const { assigneeId, dueFrom, dueTo } = ctx.params;
        const filters = {
          ...ctx.params,
          assigneeId: assigneeId === "me" ? (actingUserId(ctx) ?? "") : assigneeId,
          dueFrom: asDate(dueFrom),
          dueTo: asDate(dueTo),
        };
        return repo.listTasks(workspaceOf(ctx), filters, pageRequest(ctx.params));
      },
    }),

    /** One task. contacts.read. */
    /**
     * Internal (campaign steps): create a task with the id given, or answer
     * the one that has it, so a repeated step makes one task.
     */
    createOnce: defineAction({
      params: schemas.tasks.createOnce,
      result: TaskSchema,
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        const { taskId, workspaceId: _ws, ...input } = ctx.params;
        const existing = await repo.findTask(workspaceId, taskId);
        if (existing) return repo.taskView(existing);
        await checkLinks(ctx, workspaceId);
        const task = await repo.createTask(
          workspaceId,
          { ...input, id: taskId, dueAt: asDate(input.dueAt) },
          null,
        );
        await notifyAssignee(ctx, workspaceId, task);
        return task;
      },
    }),

    get: defineAction({
      rest: "GET /workspaces/:workspaceId/tasks/:taskId",
      ...read,
      params: schemas.tasks.get,
      result: TaskSchema,
      openapi: openapi("Get a task"),
      handler: async (ctx) =>
        repo.taskView(found(await repo.findTask(workspaceOf(ctx), ctx.params.taskId), "Task")),
    }),

    /** Create a task; its assignee is notified. contacts.write. */
    create: defineAction({
      rest: "POST /workspaces/:workspaceId/tasks",
      ...write,
      params: schemas.tasks.create,
      status: 201,
      result: TaskSchema,
      openapi: openapi(
        "Create a task (assigneeId: a member's user id; the assignee gets a task.assigned notification)",
      ),
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        await checkLinks(ctx, workspaceId);
        const task = await repo.createTask(
          workspaceId,
          { ...ctx.params, dueAt: asDate(ctx.params.dueAt) },
          actingUserId(ctx),
        );
        await notifyAssignee(ctx, workspaceId, task);
        await audit(
          ctx,
          "task.created",
          { type: "task", id: task.id },
          { title: task.title, assigneeId: task.assigneeId },
        );
        return task;
      },
    }),

    /** Change a task; a new assignee is notified, a new due date is notified again when due. contacts.write. */
    update: defineAction({
      rest: "PATCH /workspaces/:workspaceId/tasks/:taskId",
      ...write,
      params: schemas.tasks.update,
      result: TaskSchema,
      openapi: openapi(
        "Update a task (a new assignee gets a task.assigned notification; a changed due date is notified again)",
      ),
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        await checkLinks(ctx, workspaceId);
        const changes = { ...ctx.params, dueAt: asDate(ctx.params.dueAt) };
        const { task, previousAssignee } = found(
          await repo.updateTask(workspaceId, ctx.params.taskId, changes),
          "Task",
        );
        if (task.assigneeId !== previousAssignee) await notifyAssignee(ctx, workspaceId, task);
        await audit(
          ctx,
          "task.updated",
          { type: "task", id: task.id },
          { fields: sentFields(ctx.params, repo.TASK_FIELDS) },
        );
        return task;
      },
    }),

    /** Mark a task completed (or reopen it with `completed: false`). contacts.write. */
    complete: defineAction({
      rest: "PATCH /workspaces/:workspaceId/tasks/:taskId/complete",
      ...write,
      params: schemas.tasks.complete,
      result: TaskSchema,
      openapi: openapi("Complete a task (body `{completed: false}` reopens it)"),
      async handler(ctx) {
        const completed = ctx.params.completed !== false;
        const task = found(
          await repo.completeTask(workspaceOf(ctx), ctx.params.taskId, completed, actingUserId(ctx)),
          "Task",
        );
        await audit(
          ctx,
          completed ? "task.completed" : "task.reopened",
          { type: "task", id: task.id },
          { title: task.title },
        );
        return task;
      },
    }),

    /** Delete a task. contacts.delete. */
    remove: defineAction({
      rest: "DELETE /workspaces/:workspaceId/tasks/:taskId",
      ...remove,
      params: schemas.tasks.remove,
      result: SuccessSchema,
      openapi: openapi("Delete a task"),
      async handler(ctx) {
        if (!(await repo.deleteTask(workspaceOf(ctx), ctx.params.taskId))) throw notFound("Task");
        await audit(ctx, "task.deleted", { type: "task", id: ctx.params.taskId });
        return { success: true as const };
      },
    }),
  },
});
