import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";

/** The time bound of previews and the background path for big workspaces (limits lowered by env). */
let app: TestApp;
let big: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let small: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "jobs", "segments"],
    env: { SEGMENT_PREVIEW_TIMEOUT_MS: "20", SEGMENT_SYNC_LIMIT: "5" },
  });
  big = await ownerWithWorkspace(app.baseUrl);
  small = await ownerWithWorkspace(app.baseUrl);
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO contacts (id, workspace_id, email, attributes)
     SELECT gen_random_uuid()::text, $1, 'c' || g || '@x.test', jsonb_build_object('note', md5(g::text), 'n', g)
       FROM generate_series(1, 200000) AS g`,
    { bind: [big.workspaceId] },
  );
  await sequelize.query(
    `INSERT INTO contacts (id, workspace_id, email, attributes)
     SELECT gen_random_uuid()::text, $1, 'c' || g || '@x.test', jsonb_build_object('n', g) FROM generate_series(1, 10) AS g`,
    { bind: [small.workspaceId] },
  );
}, 60_000);
afterAll(() => app.stop());

test("an expensive preview is cut off by the statement timeout: 400 QUERY_TOO_EXPENSIVE", async () => {
  const conditions = Array.from({ length: 30 }, (_, i) => ({
    field: "attributes.note",
    operator: "contains",
    value: `zz${i}q`,
  }));
  const res = await big.owner.client.post(`${big.ws}/segments/preview`, {
    filter: { match: "any", conditions },
  });
  expect(res.status).toBe(400);
  expect(res.body.code).toBe("QUERY_TOO_EXPENSIVE");
});

test("a cheap preview answers count and a sample; bad filters are 400 with a path", async () => {
  const res = await small.owner.client.post(`${small.ws}/segments/preview`, {
    filter: { match: "all", conditions: [{ field: "attributes.n", operator: "lte", value: 3 }] },
  });
  expect(res.status).toBe(200);
  expect(res.body.count).toBe(3);
  expect(res.body.sample).toHaveLength(3);
  expect(res.body.sample[0]).toEqual(
    expect.objectContaining({
      id: expect.any(String),
      email: expect.any(String),
      attributes: expect.any(Object),
      score: 0,
    }),
  );
  const bad = await small.owner.client.post(`${small.ws}/segments/preview`, {
    filter: { match: "all", conditions: [{ field: "attributes.n", operator: "before", value: 3 }] },
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("filter.conditions[0].value");
  // Nothing was saved.
  expect((await small.owner.client.get(`${small.ws}/segments`)).body.pagination.total).toBe(0);
});

test("over the sync limit a create answers 202 with memberCount null and finishes as a job", async () => {
  const res = await small.owner.client.post(`${small.ws}/segments`, {
    name: "Low n",
    filter: { match: "all", conditions: [{ field: "attributes.n", operator: "lt", value: 5 }] },
  });
  expect(res.status).toBe(202);
  expect(res.body).toMatchObject({ memberCount: null, jobId: expect.any(String) });
  const job = await finishedJob(small.owner.client, small.ws, res.body.jobId);
  expect(job).toMatchObject({
    status: "completed",
    result: { segmentId: res.body.id, added: 4, removed: 0, memberCount: 4 },
  });
  expect((await small.owner.client.get(`${small.ws}/segments/${res.body.id}`)).body.memberCount).toBe(4);
});
