import { startApp, type TestApp } from "../helpers/app";
import { ownerWithWorkspace } from "../helpers/http";

let app: TestApp;
beforeAll(async () => {
  app = await startApp();
});
afterAll(() => app.stop());

test("health answers ok with the version", async () => {
  const res = await app.http().get("/api/health");
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: "ok", version: expect.any(String) });
});

test("a user registers, signs in and creates a workspace", async () => {
  const { owner, workspaceId } = await ownerWithWorkspace(app.baseUrl);
  const list = await owner.client.get("/api/workspaces");
  expect(list.status).toBe(200);
  expect(list.body).toEqual([expect.objectContaining({ id: workspaceId, role: "OWNER" })]);
});

test("unknown route is ROUTE_NOT_FOUND", async () => {
  const res = await app.http().get("/api/nope");
  expect(res.status).toBe(404);
  expect(res.body).toEqual({ error: "Route not found", code: "ROUTE_NOT_FOUND" });
});
