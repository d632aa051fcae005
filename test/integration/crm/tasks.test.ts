import { database } from "../../../lib/database";
import { crmWorld, insertContact, type CrmWorld } from "./crm-fixtures";

let w: CrmWorld;
const CRON_SECRET = "crm-cron-secret-for-tests-0123456789";
beforeAll(async () => {
  w = await crmWorld({ services: ["cron", "contacts"], env: { CRON_SECRET } });
});
afterAll(() => w.app.stop());

const hours = (n: number) => new Date(Date.now() + n * 3600_000).toISOString();

test("create with every field answers 201; the assignee is notified", async () => {
  const contactId = await insertContact(w.workspaceId);
  const companyId = (await w.owner.client.post(`${w.ws}/companies`, { name: "Task Co" })).body.id;
  const dealId = (await w.owner.client.post(`${w.ws}/deals`, { title: "Task deal" })).body.id;
  const dueAt = hours(24);
  const res = await w.owner.client.post(`${w.ws}/tasks`, {
    title: "Call the buyer",
    description: "Ask about the budget",
    type: "call",
    priority: "high",
    dueAt,
    assigneeId: w.member.id,
    contactId,
    companyId,
    dealId,
    completedAt: "2020-01-01T00:00:00Z",
  });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({
    title: "Call the buyer",
    type: "call",
    priority: "high",
    status: "open",
    overdue: false,
    dueAt,
    assigneeId: w.member.id,
    contactId,
    companyId,
    dealId,
    completedAt: null,
    createdBy: w.owner.id,
  });
  const got = await w.readKey.get(`${w.ws}/tasks/${res.body.id}`);
  expect(got.status).toBe(200);
  expect(got.body).toEqual(res.body);

  const inbox = await w.member.client.get(`${w.ws}/notifications`);
  expect(inbox.status).toBe(200);
  expect(inbox.body.data[0]).toMatchObject({
    type: "task.assigned",
    title: "New task: Call the buyer",
    resource: { type: "task", id: res.body.id },
    read: false,
    data: { taskId: res.body.id, assignedBy: w.owner.id },
  });
  expect(inbox.body.unreadCount).toBe(1);
  // Nothing for the owner who assigned it.
  expect((await w.owner.client.get(`${w.ws}/notifications`)).body.data).toEqual([]);
});

test("defaults, and no notification for a task one assigns to oneself", async () => {
  const res = await w.member.client.post(`${w.ws}/tasks`, { title: "Self task", assigneeId: w.member.id });
  expect(res.body).toMatchObject({ type: "todo", priority: "normal", dueAt: null, overdue: false });
  const inbox = await w.member.client.get(`${w.ws}/notifications?type=task.assigned`);
  expect(inbox.body.data.filter((n: { resource: { id: string } }) => n.resource.id === res.body.id)).toEqual(
    [],
  );
});

test("invalid tasks are 400 naming the field; foreign links are 404", async () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, "title"],
    [{ title: "x", type: "party" }, "type"],
    [{ title: "x", priority: "whenever" }, "priority"],
    [{ title: "x", dueAt: "next week" }, "dueAt"],
    [{ title: "x", assigneeId: w.other.owner.id }, "assigneeId"],
    [{ title: "x".repeat(301) }, "title"],
  ];
  for (const [body, field] of cases) {
    const res = await w.owner.client.post(`${w.ws}/tasks`, body);
    expect({ body, status: res.status }).toEqual({ body, status: 400 });
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
  }
  const foreignContact = await insertContact(w.other.workspaceId);
  const foreignDeal = (await w.other.owner.client.post(`${w.other.ws}/deals`, { title: "Theirs" })).body.id;
  expect((await w.owner.client.post(`${w.ws}/tasks`, { title: "x", contactId: foreignContact })).status).toBe(
    404,
  );
  const dealRes = await w.owner.client.post(`${w.ws}/tasks`, { title: "x", dealId: foreignDeal });
  expect(dealRes.status).toBe(404);
  expect(dealRes.body.error).toBe("Deal not found");
});

test("update: reassignment notifies the new assignee; bad values are 400", async () => {
  const task = (await w.owner.client.post(`${w.ws}/tasks`, { title: "Hand over" })).body;
  const res = await w.owner.client.patch(`${w.ws}/tasks/${task.id}`, {
    assigneeId: w.viewer.id,
    priority: "urgent",
    description: null,
    createdBy: "x",
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ assigneeId: w.viewer.id, priority: "urgent", createdBy: w.owner.id });
  const inbox = await w.viewer.client.get(`${w.ws}/notifications`);
  expect(
    inbox.body.data.map((n: { type: string; resource: { id: string } }) => [n.type, n.resource.id]),
  ).toContainEqual(["task.assigned", task.id]);
  // Same assignee again: no second notification.
  await w.owner.client.patch(`${w.ws}/tasks/${task.id}`, { assigneeId: w.viewer.id, title: "Hand over now" });
  const again = await w.viewer.client.get(`${w.ws}/notifications`);
  expect(again.body.data.filter((n: { resource: { id: string } }) => n.resource.id === task.id)).toHaveLength(
    1,
  );

  expect((await w.owner.client.patch(`${w.ws}/tasks/${task.id}`, { dueAt: "soon" })).status).toBe(400);
  expect(
    (await w.owner.client.patch(`${w.ws}/tasks/${task.id}`, { assigneeId: w.other.owner.id })).status,
  ).toBe(400);
  expect((await w.owner.client.patch(`${w.ws}/tasks/missing`, { title: "x" })).status).toBe(404);
  expect((await w.other.owner.client.patch(`${w.other.ws}/tasks/${task.id}`, { title: "x" })).status).toBe(
    404,
  );
  expect((await w.other.owner.client.get(`${w.other.ws}/tasks/${task.id}`)).status).toBe(404);
});

test("complete and reopen", async () => {
  const task = (await w.owner.client.post(`${w.ws}/tasks`, { title: "Finish me", dueAt: hours(-1) })).body;
  expect(task.overdue).toBe(true);
  const done = await w.member.client.patch(`${w.ws}/tasks/${task.id}/complete`);
  expect(done.status).toBe(200);
  expect(done.body).toMatchObject({
    status: "completed",
    overdue: false,
    completedBy: w.member.id,
    completedAt: expect.any(String),
  });
  const twice = await w.owner.client.patch(`${w.ws}/tasks/${task.id}/complete`, {});
  expect(twice.body.completedAt).toBe(done.body.completedAt);
  expect(twice.body.completedBy).toBe(w.member.id);
  const reopened = await w.owner.client.patch(`${w.ws}/tasks/${task.id}/complete`, { completed: false });
  expect(reopened.body).toMatchObject({
    status: "open",
    completedAt: null,
    completedBy: null,
    overdue: true,
  });
  expect((await w.owner.client.patch(`${w.ws}/tasks/${task.id}/complete`, { completed: "yes" })).status).toBe(
    400,
  );
  expect((await w.owner.client.patch(`${w.ws}/tasks/missing/complete`)).status).toBe(404);
  expect((await w.other.owner.client.patch(`${w.other.ws}/tasks/${task.id}/complete`)).status).toBe(404);
});

test("list filters by status, assignee (me), links, type, priority, due range; sorts soonest first", async () => {
  const dealId = (await w.owner.client.post(`${w.ws}/deals`, { title: "Listing deal" })).body.id;
  const make = (title: string, extra: Record<string, unknown>) =>
    w.owner.client.post(`${w.ws}/tasks`, { title: `Lst ${title}`, ...extra });
  await make("later", { dueAt: hours(48), assigneeId: w.member.id, type: "meeting" });
  await make("soon", { dueAt: hours(2), assigneeId: w.member.id, dealId });
  await make("late", { dueAt: hours(-3), priority: "low" });
  const doneId = (await make("done", { dueAt: hours(-5) })).body.id;
  await w.owner.client.patch(`${w.ws}/tasks/${doneId}/complete`);
  await make("undated", {});
  const q = (client: typeof w.owner.client, query: string) =>
    client.get(`${w.ws}/tasks?search=Lst%20&${query}`).then((r) => {
      expect(r.status).toBe(200);
      return r.body.data.map((t: { title: string }) => t.title.slice(4));
    });
  expect(await q(w.owner.client, "")).toEqual(["done", "late", "soon", "later", "undated"]);
  expect(await q(w.owner.client, "status=open")).toEqual(["late", "soon", "later", "undated"]);
  expect(await q(w.owner.client, "status=completed")).toEqual(["done"]);
  expect(await q(w.owner.client, "status=overdue")).toEqual(["late"]);
  expect(await q(w.member.client, "assigneeId=me")).toEqual(["soon", "later"]);
  expect(await q(w.owner.client, `assigneeId=${w.member.id}&sort=-dueAt`)).toEqual(["later", "soon"]);
  expect(await q(w.owner.client, `dealId=${dealId}`)).toEqual(["soon"]);
  expect(await q(w.owner.client, "type=meeting")).toEqual(["later"]);
  expect(await q(w.owner.client, "priority=low")).toEqual(["late"]);
  expect(await q(w.owner.client, "sort=title")).toEqual(["done", "late", "later", "soon", "undated"]);
  expect(await q(w.owner.client, "sort=-title")).toEqual(["undated", "soon", "later", "late", "done"]);
  expect((await q(w.owner.client, "sort=completedAt"))[0]).toBe("done");
  expect(
    await q(w.owner.client, `dueFrom=${encodeURIComponent(hours(0))}&dueTo=${encodeURIComponent(hours(24))}`),
  ).toEqual(["soon"]);
  const paged = await w.owner.client.get(`${w.ws}/tasks?search=Lst%20&limit=2&page=2`);
  expect(paged.body.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3 });
  for (const bad of ["status=soon", "sort=secret", "dueFrom=whenever", "type=party"]) {
    expect((await w.owner.client.get(`${w.ws}/tasks?${bad}`)).status).toBe(400);
  }
});

test("a VIEWER and a contacts.read key can read but not write; delete", async () => {
  const task = (await w.owner.client.post(`${w.ws}/tasks`, { title: "Guarded task" })).body;
  for (const client of [w.viewer.client, w.readKey]) {
    expect((await client.get(`${w.ws}/tasks`)).status).toBe(200);
    expect((await client.get(`${w.ws}/tasks/${task.id}`)).status).toBe(200);
    expect((await client.post(`${w.ws}/tasks`, { title: "No" })).status).toBe(403);
    expect((await client.patch(`${w.ws}/tasks/${task.id}`, { title: "No" })).status).toBe(403);
    expect((await client.patch(`${w.ws}/tasks/${task.id}/complete`)).status).toBe(403);
    expect((await client.delete(`${w.ws}/tasks/${task.id}`)).status).toBe(403);
  }
  const byKey = await w.fullKey.post(`${w.ws}/tasks`, { title: "Keyed", assigneeId: w.owner.id });
  expect(byKey.status).toBe(201);
  expect(byKey.body.createdBy).toBeNull();
  expect((await w.other.owner.client.delete(`${w.other.ws}/tasks/${task.id}`)).status).toBe(404);
  const removed = await w.member.client.delete(`${w.ws}/tasks/${task.id}`);
  expect(removed.body).toEqual({ success: true });
  expect((await w.owner.client.get(`${w.ws}/tasks/${task.id}`)).status).toBe(404);
});

describe("due notifications", () => {
  const dueCount = async (taskId: string) => {
    const sequelize = await database();
    const [rows] = await sequelize.query(
      `SELECT count(*)::int AS n FROM notifications WHERE type = 'task.due' AND resource_id = :taskId`,
      {
        replacements: { taskId },
      },
    );
    return (rows as Array<{ n: number }>)[0].n;
  };

  test("a due task notifies its assignee once, even with many concurrent checks", async () => {
    const due = [];
    for (let i = 0; i < 5; i += 1) {
      due.push(
        (
          await w.owner.client.post(`${w.ws}/tasks`, {
            title: `Due ${i}`,
            dueAt: hours(-1),
            assigneeId: w.member.id,
          })
        ).body.id,
      );
    }
    const notYet = (
      await w.owner.client.post(`${w.ws}/tasks`, {
        title: "Not yet",
        dueAt: hours(5),
        assigneeId: w.member.id,
      })
    ).body.id;
    const done = (
      await w.owner.client.post(`${w.ws}/tasks`, {
        title: "Already done",
        dueAt: hours(-1),
        assigneeId: w.member.id,
      })
    ).body.id;
    await w.owner.client.patch(`${w.ws}/tasks/${done}/complete`);
    const unassigned = (await w.owner.client.post(`${w.ws}/tasks`, { title: "Nobody", dueAt: hours(-1) }))
      .body.id;

    const made = await Promise.all(Array.from({ length: 6 }, () => w.app.broker.call("crm.notifyDueTasks")));
    expect((made as number[]).every((n) => Number.isInteger(n))).toBe(true);
    for (const id of due) expect(await dueCount(id)).toBe(1);
    for (const id of [notYet, done, unassigned]) expect(await dueCount(id)).toBe(0);
    expect(await w.app.broker.call("crm.notifyDueTasks")).toBe(0);

    const inbox = await w.member.client.get(`${w.ws}/notifications?type=task.due&unread=true`);
    expect(inbox.body.data.map((n: { title: string }) => n.title).sort()).toEqual([
      "Task due: Due 0",
      "Task due: Due 1",
      "Task due: Due 2",
      "Task due: Due 3",
      "Task due: Due 4",
    ]);
    expect(inbox.body.data[0].resource.type).toBe("task");
  });

  test("a new due date is notified again when it comes", async () => {
    const id = (
      await w.owner.client.post(`${w.ws}/tasks`, {
        title: "Moved",
        dueAt: hours(-2),
        assigneeId: w.member.id,
      })
    ).body.id;
    await w.app.broker.call("crm.notifyDueTasks");
    expect(await dueCount(id)).toBe(1);
    await w.owner.client.patch(`${w.ws}/tasks/${id}`, { dueAt: hours(-1) });
    await w.app.broker.call("crm.notifyDueTasks");
    expect(await dueCount(id)).toBe(2);
    await w.owner.client.patch(`${w.ws}/tasks/${id}`, { title: "Moved (renamed)" });
    await w.app.broker.call("crm.notifyDueTasks");
    expect(await dueCount(id)).toBe(2);
  });

  test("the cron tick runs the check", async () => {
    const id = (
      await w.owner.client.post(`${w.ws}/tasks`, {
        title: "Ticked",
        dueAt: hours(-1),
        assigneeId: w.viewer.id,
      })
    ).body.id;
    const tick = await w.app.http().get("/api/cron/tick", { bearer: CRON_SECRET });
    expect(tick.status).toBe(200);
    expect(tick.body.results["crm.notifyDueTasks"]).toBeGreaterThanOrEqual(1);
    expect(await dueCount(id)).toBe(1);
  });

  test("the check is internal: no route reaches it", async () => {
    const res = await w.owner.client.get(`/api/crm/notifyDueTasks`);
    expect(res.status).toBe(404);
  });
});
