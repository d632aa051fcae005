import { database } from "../../../lib/database";
import { failAbandonedJobs, startJob } from "../../../lib/jobs";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "jobs"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

test("a job runs in the background and ends completed with its result and progress", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let reported!: () => void;
  const progressed = new Promise<void>((resolve) => (reported = resolve));
  const { jobId, done } = await startJob(
    { workspaceId: ctx.workspaceId, type: "test.work", total: 10 },
    async (progress) => {
      await progress(3, 10);
      reported();
      await gate;
      return { processed: 10 };
    },
  );
  // The work runs in the background: read once its progress is written.
  await progressed;

  const running = await ctx.owner.client.get(`${ctx.ws}/jobs?id=${jobId}`);
  expect(running.status).toBe(200);
  expect(running.body.data).toEqual([
    expect.objectContaining({
      id: jobId,
      type: "test.work",
      status: "running",
      progress: { done: 3, total: 10 },
    }),
  ]);

  release();
  await done;
  const finished = await ctx.owner.client.get(`${ctx.ws}/jobs?status=completed&type=test.work`);
  expect(finished.body.data[0]).toMatchObject({
    id: jobId,
    status: "completed",
    result: { processed: 10 },
    progress: { done: 10, total: 10 },
    error: null,
  });
  expect(finished.body.data[0].finishedAt).toEqual(expect.any(String));
  expect(finished.body.pagination).toEqual({ page: 1, limit: 50, total: 1, totalPages: 1 });
});

test("a job that throws ends failed with the error message", async () => {
  const { jobId, done } = await startJob({ workspaceId: ctx.workspaceId, type: "test.fail" }, async () => {
    throw new Error("the input was broken");
  });
  await done;
  const res = await ctx.owner.client.get(`${ctx.ws}/jobs?id=${jobId}`);
  expect(res.body.data[0]).toMatchObject({ status: "failed", error: "the input was broken" });
});

test("a job whose worker stopped heartbeating is failed by the sweep", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const { jobId, done } = await startJob(
    { workspaceId: ctx.workspaceId, type: "test.abandoned" },
    () => gate,
  );
  const sequelize = await database();
  await sequelize.query(`UPDATE jobs SET heartbeat_at = now() - interval '10 minutes' WHERE id = :id`, {
    replacements: { id: jobId },
  });
  expect(await failAbandonedJobs()).toBeGreaterThanOrEqual(1);
  const res = await ctx.owner.client.get(`${ctx.ws}/jobs?id=${jobId}`);
  expect(res.body.data[0]).toMatchObject({ status: "failed", error: "The worker running this job stopped" });
  release();
  await done;
});

test("jobs are scoped to their workspace and validated", async () => {
  const other = await signUp(app.baseUrl);
  expect((await other.client.get(`${ctx.ws}/jobs`)).status).toBe(403);
  const bad = await ctx.owner.client.get(`${ctx.ws}/jobs?status=exploded`);
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("status");
  const otherWs = await other.client.post("/api/workspaces", { name: "Other" });
  const empty = await other.client.get(`/api/workspaces/${otherWs.body.id}/jobs`);
  expect(empty.body).toEqual({ data: [], pagination: { page: 1, limit: 50, total: 0, totalPages: 0 } });
});

test("a job safe to stop halfway is cancelled: it stops at its next progress, what it did stays, the cancel is audited", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const steps: number[] = [];
  const { jobId, done } = await startJob(
    { workspaceId: ctx.workspaceId, type: "test.stoppable", total: 3, cancelPermission: "contacts.write" },
    async (progress) => {
      for (let step = 1; step <= 3; step++) {
        steps.push(step);
        if (step === 1) await gate;
        await progress(step, 3);
      }
      return { steps };
    },
  );
  await waitFor(() => steps.length === 1);
  const listed = await ctx.owner.client.get(`${ctx.ws}/jobs?id=${jobId}`);
  expect(listed.body.data[0]).toMatchObject({ status: "running", cancellable: true });

  const res = await ctx.owner.client.post(`${ctx.ws}/jobs/${jobId}/cancel`);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ id: jobId, status: "cancelled", cancellable: false });
  expect(res.body.finishedAt).toEqual(expect.any(String));
  release();
  await done;
  // Step 1 was under way; its progress write saw the cancel, so steps 2 and 3 never ran.
  expect(steps).toEqual([1]);
  const after = await ctx.owner.client.get(`${ctx.ws}/jobs?id=${jobId}`);
  expect(after.body.data[0]).toMatchObject({ status: "cancelled", result: null, error: null });
  const again = await ctx.owner.client.post(`${ctx.ws}/jobs/${jobId}/cancel`);
  expect(again.status).toBe(409);
  expect(again.body.code).toBe("INVALID_STATE");
  const logged = await ctx.owner.client.get(`${ctx.ws}/audit-logs?action=job.cancelled`);
  expect(logged.body.data[0]).toMatchObject({
    targetType: "job",
    targetId: jobId,
    metadata: { jobType: "test.stoppable" },
  });
});

test("cancel: a job that runs to its end or has ended is 409, another workspace's 404, without the job's permission 403", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const whole = await startJob({ workspaceId: ctx.workspaceId, type: "test.whole" }, () => gate);
  const refused = await ctx.owner.client.post(`${ctx.ws}/jobs/${whole.jobId}/cancel`);
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ code: "INVALID_STATE", error: expect.stringContaining("test.whole") });
  expect((await ctx.owner.client.get(`${ctx.ws}/jobs?id=${whole.jobId}`)).body.data[0].cancellable).toBe(
    false,
  );

  const ended = await startJob(
    { workspaceId: ctx.workspaceId, type: "test.quick", cancelPermission: "contacts.write" },
    async () => ({ ok: true }),
  );
  await ended.done;
  expect((await ctx.owner.client.post(`${ctx.ws}/jobs/${ended.jobId}/cancel`)).status).toBe(409);

  const stoppable = await startJob(
    { workspaceId: ctx.workspaceId, type: "test.stoppable", cancelPermission: "contacts.write" },
    () => gate,
  );
  const viewer = await signUp(app.baseUrl, "Viewer");
  expect(
    (await ctx.owner.client.post(`${ctx.ws}/members`, { email: viewer.email, role: "VIEWER" })).status,
  ).toBe(201);
  const forbidden = await viewer.client.post(`${ctx.ws}/jobs/${stoppable.jobId}/cancel`);
  expect(forbidden.status).toBe(403);

  const other = await ownerWithWorkspace(app.baseUrl);
  expect((await other.owner.client.post(`${other.ws}/jobs/${stoppable.jobId}/cancel`)).status).toBe(404);
  expect((await ctx.owner.client.post(`${ctx.ws}/jobs/no-such-job/cancel`)).status).toBe(404);
  expect((await ctx.owner.client.get(`${ctx.ws}/jobs?id=${stoppable.jobId}`)).body.data[0].status).toBe(
    "running",
  );
  release();
  await Promise.all([whole.done, stoppable.done]);
});
