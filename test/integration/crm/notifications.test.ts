import { database } from "../../../lib/database";
import { crmWorld, type CrmWorld } from "./crm-fixtures";

let w: CrmWorld;
beforeAll(async () => {
  w = await crmWorld();
});
afterAll(() => w.app.stop());

/** Three task.assigned notifications for the member, one for the viewer. */
async function assignSome() {
  const ids: string[] = [];
  for (const title of ["One", "Two", "Three"]) {
    ids.push((await w.owner.client.post(`${w.ws}/tasks`, { title, assigneeId: w.member.id })).body.id);
  }
  await w.owner.client.post(`${w.ws}/tasks`, { title: "Viewer's", assigneeId: w.viewer.id });
  return ids;
}

let taskIds: string[];
beforeAll(async () => {
  taskIds = await assignSome();
});

test("the caller sees only their own notifications, newest first, paginated with the unread count", async () => {
  const res = await w.member.client.get(`${w.ws}/notifications?limit=2`);
  expect(res.status).toBe(200);
  expect(res.body.data.map((n: { title: string }) => n.title)).toEqual(["New task: Three", "New task: Two"]);
  expect(res.body.pagination).toEqual({ page: 1, limit: 2, total: 3, totalPages: 2 });
  expect(res.body.unreadCount).toBe(3);
  const viewer = await w.viewer.client.get(`${w.ws}/notifications`);
  expect(viewer.body.data.map((n: { title: string }) => n.title)).toEqual(["New task: Viewer's"]);
  expect((await w.owner.client.get(`${w.ws}/notifications`)).body.data).toEqual([]);
});

test("mark one read and unread; filter by unread", async () => {
  const [first] = (await w.member.client.get(`${w.ws}/notifications`)).body.data;
  const read = await w.member.client.patch(`${w.ws}/notifications/${first.id}`, { read: true });
  expect(read.status).toBe(200);
  expect(read.body).toMatchObject({ id: first.id, read: true, readAt: expect.any(String) });
  const unread = await w.member.client.get(`${w.ws}/notifications?unread=true`);
  expect(unread.body.data.map((n: { id: string }) => n.id)).not.toContain(first.id);
  expect(unread.body.unreadCount).toBe(2);
  expect(
    (await w.member.client.get(`${w.ws}/notifications?unread=false`)).body.data.map(
      (n: { id: string }) => n.id,
    ),
  ).toEqual([first.id]);
  const back = await w.member.client.patch(`${w.ws}/notifications/${first.id}`, { read: false });
  expect(back.body).toMatchObject({ read: false, readAt: null });
  expect((await w.member.client.patch(`${w.ws}/notifications/${first.id}`, {})).status).toBe(400);
  expect((await w.member.client.patch(`${w.ws}/notifications/${first.id}`, { read: "sure" })).status).toBe(
    400,
  );
  expect((await w.member.client.get(`${w.ws}/notifications?unread=maybe`)).status).toBe(400);
});

test("filter by type; the unread count stays the caller's whole count", async () => {
  const assigned = await w.member.client.get(`${w.ws}/notifications?type=task.assigned&limit=1`);
  expect(assigned.body.pagination.total).toBe(3);
  expect(assigned.body.data.map((n: { type: string }) => n.type)).toEqual(["task.assigned"]);
  const due = await w.member.client.get(`${w.ws}/notifications?type=task.due`);
  expect(due.body.data).toEqual([]);
  expect(due.body.pagination.total).toBe(0);
  expect(due.body.unreadCount).toBe(assigned.body.unreadCount);
});

test("another user's or another workspace's notification is 404", async () => {
  const [mine] = (await w.member.client.get(`${w.ws}/notifications`)).body.data;
  expect((await w.viewer.client.patch(`${w.ws}/notifications/${mine.id}`, { read: true })).status).toBe(404);
  expect((await w.owner.client.delete(`${w.ws}/notifications/${mine.id}`)).status).toBe(404);
  expect(
    (await w.other.owner.client.patch(`${w.other.ws}/notifications/${mine.id}`, { read: true })).status,
  ).toBe(404);
  expect((await w.member.client.patch(`${w.ws}/notifications/missing`, { read: true })).status).toBe(404);
});

test("notifications need a signed-in session: an API key is 401", async () => {
  const [mine] = (await w.member.client.get(`${w.ws}/notifications`)).body.data;
  expect((await w.fullKey.get(`${w.ws}/notifications`)).status).toBe(401);
  expect((await w.fullKey.patch(`${w.ws}/notifications/${mine.id}`, { read: true })).status).toBe(401);
  expect((await w.fullKey.patch(`${w.ws}/notifications/mark-all-read`)).status).toBe(401);
  expect((await w.fullKey.delete(`${w.ws}/notifications/${mine.id}`)).status).toBe(401);
  expect((await w.other.owner.client.get(`${w.ws}/notifications`)).status).toBe(403);
});

test("mark-all-read marks only the caller's; delete removes one", async () => {
  const res = await w.member.client.patch(`${w.ws}/notifications/mark-all-read`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ updated: 3 });
  expect((await w.member.client.get(`${w.ws}/notifications`)).body.unreadCount).toBe(0);
  expect((await w.viewer.client.get(`${w.ws}/notifications`)).body.unreadCount).toBe(1);
  expect((await w.member.client.patch(`${w.ws}/notifications/mark-all-read`, {})).body).toEqual({
    updated: 0,
  });

  const [first] = (await w.member.client.get(`${w.ws}/notifications`)).body.data;
  const removed = await w.member.client.delete(`${w.ws}/notifications/${first.id}`);
  expect(removed.body).toEqual({ success: true });
  expect((await w.member.client.delete(`${w.ws}/notifications/${first.id}`)).status).toBe(404);
  expect((await w.member.client.get(`${w.ws}/notifications`)).body.pagination.total).toBe(2);
});

test("deleting a notification removes that row only", async () => {
  const sequelize = await database();
  const [rows] = await sequelize.query(
    `SELECT count(*)::int AS n FROM notifications WHERE resource_id IN (:ids)`,
    { replacements: { ids: taskIds } },
  );
  expect((rows as Array<{ n: number }>)[0].n).toBe(2);
});
