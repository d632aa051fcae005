import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace, type HttpClient } from "../../helpers/http";
import { domainEventProbe } from "./probe";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let client: HttpClient;
let probe: ReturnType<typeof domainEventProbe>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "contacts", "jobs"] });
  probe = domainEventProbe(app.broker);
  ctx = await ownerWithWorkspace(app.baseUrl);
  client = ctx.owner.client;
});
afterAll(() => app.stop());

async function importCsv(c: HttpClient, ws: string, csv: string, query = "") {
  const res = await c.request("POST", `${ws}/contacts/import${query}`, {
    raw: csv,
    headers: { "content-type": "text/csv" },
  });
  expect(res.status).toBe(202);
  return finishedJob(c, ws, res.body.jobId);
}

/**
 * An opt-out through the API, waited for: domain events arrive in publication
 * order, so once it is seen every fact published before it has been seen too.
 */
async function optOutMarker(c: HttpClient, ws: string, contactId: string) {
  expect(
    (await c.put(`${ws}/contacts/${contactId}/consent`, { channel: "chatapp2", status: "opted_out" })).status,
  ).toBe(200);
  await probe.waitFor(
    (e) => e.type === "unsubscribe.chatapp2" && e.data.contactId === contactId && e.data.source === "api",
  );
}

const emails = async (c: HttpClient, ws: string, qs = "") =>
  (await c.get(`${ws}/contacts?sort=email&limit=100&${qs}`)).body.data.map((x: { email: string }) => x.email);

/** Each contact's known consent statuses (channels not `unknown`), by email (else externalId). */
const consentStatuses = (list: Array<{ email: string | null; externalId: string | null; consent: object }>) =>
  Object.fromEntries(
    list.map((x) => [
      x.email ?? x.externalId,
      Object.fromEntries(
        Object.entries(x.consent as Record<string, { status: string }>)
          .filter(([, e]) => e.status !== "unknown")
          .map(([channel, e]) => [channel, e.status]),
      ),
    ]),
  );

describe("import", () => {
  test("a line with a NUL byte fails alone, with its line; the lines around it are imported", async () => {
    const csv = [
      "email,firstName",
      "nul-before@example.com,Before",
      "nul-row@example.com,Ba\u0000d",
      "nul-after@example.com,After",
    ].join("\n");
    const job = await importCsv(client, ctx.ws, csv);
    expect(job).toMatchObject({
      status: "completed",
      result: { created: 2, updated: 0, failed: [{ line: 3, error: expect.stringContaining("NUL") }] },
    });
    const found = await client.get(`${ctx.ws}/contacts?search=nul-&limit=10`);
    expect(found.body.data.map((c: { email: string }) => c.email).sort()).toEqual([
      "nul-after@example.com",
      "nul-before@example.com",
    ]);
  });

  test("a CSV with good and bad rows imports the good ones and reports each bad line", async () => {
    const csv = [
      "email,First Name,last_name,phone,tags,attributes.plan,Favourite colour",
      "ann@example.com,Ann,Lee,+14155552671,vip;beta,pro,red",
      "not-an-email,Bad,Row,,,,",
      "bo@example.com,Bo,,12,,,",
      'cy@example.com,"Cy, Jr.",Day,,,"{""a"":1}",',
      "too,many,columns,here,a,b,c,d",
      ",,NoIdentity,,,,",
      "ANN@example.com,Annie,,,new,,",
    ].join("\n");
    const job = await importCsv(client, ctx.ws, csv);
    expect(job).toMatchObject({ type: "contacts.import", status: "completed" });
    const restaged = await importCsv(
      client,
      ctx.ws,
      "email,stage\nann@example.com,lead\nnew@example.com,customer\n",
    );
    expect(restaged.result).toMatchObject({ created: 1, updated: 1, failed: [] });
    const annId = (await client.get(`${ctx.ws}/contacts?search=ann@`)).body.data[0].id;
    const annStages = (await client.get(`${ctx.ws}/contacts/${annId}/stages`)).body.history;
    expect(annStages).toEqual([expect.objectContaining({ from: null, to: "lead", reason: "import" })]);
    expect(job.result).toMatchObject({
      created: 2,
      updated: 1,
      failedCount: 4,
      ignoredColumns: ["Favourite colour"],
    });
    expect(job.result.failed.map((f: { line: number }) => f.line)).toEqual([3, 4, 6, 7]);
    expect(job.result.failed[0].error).toMatch(/^email /);
    expect(job.result.failed[1].error).toMatch(/^phone /);
    expect(job.result.failed[2].error).toMatch(/columns/);
    expect(job.progress.done).toBe(job.progress.total);

    const ann = (await client.get(`${ctx.ws}/contacts?search=ann@`)).body.data[0];
    expect(ann).toMatchObject({
      firstName: "Annie",
      lastName: "Lee",
      phone: "+14155552671",
      tags: ["vip", "beta", "new"],
      attributes: { plan: "pro" },
    });
    const cy = (await client.get(`${ctx.ws}/contacts?search=cy@`)).body.data[0];
    expect(cy).toMatchObject({ firstName: "Cy, Jr.", attributes: { plan: { a: 1 } } });
    await probe.waitFor((e) => e.type === "contact.created" && e.data.email === "cy@example.com");
    await probe.waitFor((e) => e.type === "contact.updated" && e.data.email === "ann@example.com");
  });

  test.each([
    ["without a boundary", "multipart/form-data", "--x\r\n"],
    [
      "cut short",
      "multipart/form-data; boundary=x",
      '--x\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nemail\n',
    ],
  ])("a multipart body %s is a 400 naming file", async (_name, type, body) => {
    const res = await ctx.owner.client.request("POST", `${ctx.ws}/contacts/import`, {
      raw: body,
      headers: { "content-type": type },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: "VALIDATION_ERROR",
      details: [{ field: "file", message: expect.any(String) }],
    });
  });

  test("mapping (query or multipart field) renames columns; a multipart file is accepted", async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    const c = fresh.owner.client;
    const mapping = encodeURIComponent(
      JSON.stringify({ "E-mail address": "email", Plan: "attributes.plan", Junk: null }),
    );
    const job = await importCsv(
      c,
      fresh.ws,
      "E-mail address,Plan,Junk\nq@x.io,team,zzz\n",
      `?mapping=${mapping}`,
    );
    expect(job.result).toMatchObject({ created: 1, failed: [], ignoredColumns: ["Junk"] });
    expect((await c.get(`${fresh.ws}/contacts`)).body.data[0].attributes).toEqual({ plan: "team" });

    const form = new FormData();
    form.append("mapping", JSON.stringify({ Mail: "email" }));
    form.append(
      "file",
      new Blob(["Mail,city\nm1@x.io,Oslo\nm2@x.io,Rome\n"], { type: "text/csv" }),
      "people.csv",
    );
    const res = await fetch(`${app.baseUrl}${fresh.ws}/contacts/import`, {
      method: "POST",
      body: form,
      headers: { cookie: [...c.cookies].map(([k, v]) => `${k}=${v}`).join("; ") },
    });
    expect(res.status).toBe(202);
    const multi = await finishedJob(c, fresh.ws, ((await res.json()) as { jobId: string }).jobId);
    expect(multi.result).toMatchObject({ created: 2, updated: 0, failed: [] });
    expect(await emails(c, fresh.ws, "city=Rome")).toEqual(["m2@x.io"]);
  });

  test("consent columns (or a mapping to one) set consent with source import and emit unsubscribe.<channel> when the status changes; unknown or empty leave it; a bad value fails its row", async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    const c = fresh.owner.client;
    const ids: Record<string, string> = {};
    for (const email of ["out1@x.io", "out2@x.io", "out3@x.io"]) {
      ids[email] = (await c.post(`${fresh.ws}/contacts`, { email })).body.id;
      const put = await c.put(`${fresh.ws}/contacts/${ids[email]}/consent`, {
        channel: "email",
        status: "opted_out",
      });
      expect(put.status).toBe(200);
    }
    const optedOut = (await c.get(`${fresh.ws}/contacts/${ids["out1@x.io"]}/consent`)).body.email;
    expect(optedOut).toMatchObject({ status: "opted_out", source: "api" });

    const csv = [
      "email,consent.email,Consent.SMS,Push status,firstName",
      "out1@x.io,unknown,opted_out,,One",
      "out2@x.io,,,,Two",
      "out3@x.io,Opted_Out,opted_in,,Three",
      "new@x.io,opted_out,,OPTED_OUT,New",
      "bad@x.io,opted_out,maybe,,Bad",
      "in@x.io,opted_in,,,In",
      "twice@x.io,opted_out,,,Twice",
      "twice@x.io,opted_out,,,Again",
    ].join("\n");
    const mapping = encodeURIComponent(JSON.stringify({ "Push status": "consent.push" }));
    const job = await importCsv(c, fresh.ws, csv, `?mapping=${mapping}`);
    expect(job.result).toMatchObject({ created: 3, updated: 4, failedCount: 1, ignoredColumns: [] });
    expect(job.result.failed).toEqual([
      { line: 6, error: expect.stringMatching(/^consent\.sms must be opted_in, opted_out or unknown/) },
    ]);
    expect(await emails(c, fresh.ws)).toEqual([
      "in@x.io",
      "new@x.io",
      "out1@x.io",
      "out2@x.io",
      "out3@x.io",
      "twice@x.io",
    ]);

    const byEmail = Object.fromEntries(
      (await c.get(`${fresh.ws}/contacts?limit=100`)).body.data.map((x: { email: string }) => [x.email, x]),
    );
    expect(consentStatuses(Object.values(byEmail))).toEqual({
      "out1@x.io": { email: "opted_out", sms: "opted_out" },
      "out2@x.io": { email: "opted_out" },
      "out3@x.io": { email: "opted_out", sms: "opted_in" },
      "new@x.io": { email: "opted_out", push: "opted_out" },
      "in@x.io": { email: "opted_in" },
      "twice@x.io": { email: "opted_out" },
    });
    // Unchanged opt-outs keep their record; changed channels say where the change came from.
    expect(byEmail["out1@x.io"].consent.email).toEqual(optedOut);
    expect(byEmail["out2@x.io"].consent.email.source).toBe("api");
    expect(byEmail["out3@x.io"].consent.email.source).toBe("api");
    expect(byEmail["out1@x.io"].consent.sms).toMatchObject({ status: "opted_out", source: "import" });
    expect(byEmail["out3@x.io"].consent.sms).toMatchObject({ status: "opted_in", source: "import" });
    expect(byEmail["new@x.io"].consent.push).toMatchObject({ status: "opted_out", source: "import" });
    expect(byEmail["in@x.io"].consent.email).toMatchObject({ status: "opted_in", source: "import" });
    expect(byEmail["out1@x.io"].firstName).toBe("One");

    await optOutMarker(c, fresh.ws, ids["out2@x.io"]);
    const fromImport = probe.seen.filter(
      (e) =>
        e.workspaceId === fresh.workspaceId && e.type.startsWith("unsubscribe.") && e.data.source !== "api",
    );
    expect(
      fromImport
        .map((e) => e.data)
        .sort((a, b) => `${a.email}${a.channel}`.localeCompare(`${b.email}${b.channel}`)),
    ).toEqual([
      {
        contactId: byEmail["new@x.io"].id,
        email: "new@x.io",
        externalId: null,
        channel: "email",
        source: "import",
      },
      {
        contactId: byEmail["new@x.io"].id,
        email: "new@x.io",
        externalId: null,
        channel: "push",
        source: "import",
      },
      { contactId: ids["out1@x.io"], email: "out1@x.io", externalId: null, channel: "sms", source: "import" },
      {
        contactId: byEmail["twice@x.io"].id,
        email: "twice@x.io",
        externalId: null,
        channel: "email",
        source: "import",
      },
    ]);
    expect(fromImport.map((e) => e.type).sort()).toEqual([
      "unsubscribe.email",
      "unsubscribe.email",
      "unsubscribe.push",
      "unsubscribe.sms",
    ]);
  });

  test("bad mapping, wrong content type and missing file are 400; over 50 MiB is 413; read scope is 403", async () => {
    const bad = await client.request(
      "POST",
      `${ctx.ws}/contacts/import?mapping=${encodeURIComponent('{"a":"password"}')}`,
      {
        raw: "a\n1\n",
        headers: { "content-type": "text/csv" },
      },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].field).toBe("mapping.a");
    const badChannel = await client.request(
      "POST",
      `${ctx.ws}/contacts/import?mapping=${encodeURIComponent('{"a":"consent.fax"}')}`,
      { raw: "a\n1\n", headers: { "content-type": "text/csv" } },
    );
    expect(badChannel.status).toBe(400);
    expect(badChannel.body.details[0].field).toBe("mapping.a");
    const notJson = await client.request("POST", `${ctx.ws}/contacts/import?mapping=nope`, {
      raw: "a\n",
      headers: { "content-type": "text/csv" },
    });
    expect(notJson.status).toBe(400);
    const json = await client.post(`${ctx.ws}/contacts/import`, { csv: "email\n" });
    expect(json.status).toBe(400);
    const form = new FormData();
    form.append("other", "x");
    const noFile = await fetch(`${app.baseUrl}${ctx.ws}/contacts/import`, {
      method: "POST",
      body: form,
      headers: { cookie: [...client.cookies].map(([k, v]) => `${k}=${v}`).join("; ") },
    });
    expect(noFile.status).toBe(400);
    const huge = await client.request("POST", `${ctx.ws}/contacts/import`, {
      raw: Buffer.alloc(51 * 1024 * 1024, 0x61),
      headers: { "content-type": "text/csv" },
    });
    expect(huge.status).toBe(413);
    expect(huge.body.code).toBe("PAYLOAD_TOO_LARGE");

    const key = (await client.post(`${ctx.ws}/keys`, { name: "r", scopes: ["contacts.read"] })).body.key;
    const res = await app.http().request("POST", `${ctx.ws}/contacts/import`, {
      raw: "email\nx@y.io\n",
      headers: { "content-type": "text/csv" },
      bearer: key,
    });
    expect(res.status).toBe(403);
    expect(
      (
        await app.http().request("POST", `${ctx.ws}/contacts/import`, {
          raw: "email\n",
          headers: { "content-type": "text/csv" },
        })
      ).status,
    ).toBe(401);
  });
});

describe("export", () => {
  test("export then import into another workspace (and into the same one) gives the same contacts, consent included", async () => {
    const src = await ownerWithWorkspace(app.baseUrl);
    const c = src.owner.client;
    const people = [
      {
        email: "r1@x.io",
        firstName: "Ré",
        lastName: 'Quote "q", comma',
        phone: "+33612345678",
        tags: ["a", "b"],
        locale: "fr-FR",
        timezone: "Europe/Paris",
        country: "FR",
        city: "Paris",
        stage: "lead",
        externalId: "e-1",
        attributes: { plan: "pro", seats: 3, flag: true, n: "42", obj: { x: [1] }, s: "true" },
      },
      { email: "r2@x.io", firstName: "Line\nBreak", attributes: { plan: "free" } },
      { phone: "+14155552671", externalId: "e-3" },
    ];
    const ids: string[] = [];
    for (const p of people) {
      const created = await c.post(`${src.ws}/contacts`, p);
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    const consent = [
      { id: ids[0], channel: "email", status: "opted_out" },
      { id: ids[0], channel: "sms", status: "opted_in" },
      { id: ids[1], channel: "push", status: "opted_out" },
      { id: ids[1], channel: "chatapp1", status: "opted_in" },
    ];
    for (const { id, ...body } of consent)
      expect((await c.put(`${src.ws}/contacts/${id}/consent`, body)).status).toBe(200);

    const exported = await c.get(`${src.ws}/contacts/export`);
    expect(exported.status).toBe(200);
    expect(exported.headers.get("content-type")).toContain("text/csv");
    const lines = exported.text.split("\n");
    const header = lines[0];
    expect(header).toBe(
      "id,email,phone,firstName,lastName,externalId,locale,timezone,country,city,tags,stage,score,companyId,ownerId,createdAt,updatedAt," +
        "consent.email,consent.sms,consent.push,consent.chatapp1,consent.chatapp2," +
        "attributes.flag,attributes.n,attributes.obj,attributes.plan,attributes.s,attributes.seats",
    );
    expect(lines.find((l) => l.startsWith(`${ids[0]},r1@x.io,`))).toContain(
      ",opted_out,opted_in,unknown,unknown,unknown,",
    );

    const one = await c.get(`${src.ws}/contacts/${ids[1]}/export`);
    expect(one.status).toBe(200);
    expect(one.text.split("\n")[0]).toContain(
      ",consent.email,consent.sms,consent.push,consent.chatapp1,consent.chatapp2,",
    );
    expect(one.text).toContain(",unknown,unknown,opted_out,opted_in,unknown,");

    const dst = await ownerWithWorkspace(app.baseUrl);
    const job = await importCsv(dst.owner.client, dst.ws, exported.text);
    expect(job.result).toMatchObject({ created: 3, updated: 0, failed: [] });

    // Consent compares by status: its source and time are the importer's.
    const strip = (list: Array<Record<string, unknown>>) =>
      list
        .map(({ id: _i, createdAt: _c, updatedAt: _u, consent: _s, ...rest }) => rest)
        .sort((a, b) => String(a.externalId ?? a.email).localeCompare(String(b.externalId ?? b.email)));
    const source = (await c.get(`${src.ws}/contacts?limit=100`)).body.data;
    const imported = (await dst.owner.client.get(`${dst.ws}/contacts?limit=100`)).body.data;
    expect(strip(imported)).toEqual(strip(source));
    expect(consentStatuses(imported)).toEqual(consentStatuses(source));
    const r1 = imported.find((x: { email: string }) => x.email === "r1@x.io");
    expect(r1.consent.email).toMatchObject({ status: "opted_out", source: "import" });
    expect(r1.consent.sms).toMatchObject({ status: "opted_in", source: "import" });
    const unsubscribed = await probe.waitFor(
      (e) => e.workspaceId === dst.workspaceId && e.type.startsWith("unsubscribe."),
      2,
    );
    expect(unsubscribed.map((e) => [e.type, e.data.email, e.data.source]).sort()).toEqual([
      ["unsubscribe.email", "r1@x.io", "import"],
      ["unsubscribe.push", "r2@x.io", "import"],
    ]);

    // The same file back into its own workspace: every contact found, nothing changes, no opt-out again.
    const again = await importCsv(c, src.ws, exported.text);
    expect(again.result).toMatchObject({ created: 0, updated: 3, failed: [] });
    const reread = (await c.get(`${src.ws}/contacts?limit=100`)).body.data;
    expect(strip(reread)).toEqual(strip(source));
    expect(reread.map((x: { consent: object }) => x.consent)).toEqual(
      source.map((x: { consent: object }) => x.consent),
    );
    await optOutMarker(c, src.ws, ids[2]);
    expect(probe.seen.filter((e) => e.workspaceId === src.workspaceId && e.data.source === "import")).toEqual(
      [],
    );
  });

  test("export is filtered like the list", async () => {
    const csv = (await client.get(`${ctx.ws}/contacts/export?tag=vip`)).text.trim().split("\n");
    expect(csv).toHaveLength(2);
    expect(csv[1]).toContain("ann@example.com");
    expect((await client.get(`${ctx.ws}/contacts/export?sort=email`)).status).toBe(200);
    expect((await client.get(`${ctx.ws}/contacts/export?createdFrom=never`)).status).toBe(400);
  });
});

describe("bulk", () => {
  let ids: string[];
  let bulkWs: string;
  let c: HttpClient;
  beforeAll(async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    bulkWs = fresh.ws;
    c = fresh.owner.client;
    ids = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (await c.post(`${bulkWs}/contacts`, { email: `b${i}@x.io`, tags: i < 2 ? ["old"] : [] })).body.id,
      );
  });

  test("tag, untag, setStage, setAttribute on ids answer {affected} counting changed contacts", async () => {
    expect(
      (await c.post(`${bulkWs}/contacts/bulk`, { action: "tag", ids: [...ids, "missing"], value: "old" }))
        .body,
    ).toEqual({ affected: 3 });
    expect(
      (await c.post(`${bulkWs}/contacts/bulk`, { action: "untag", ids: ids.slice(0, 2), value: "old" })).body,
    ).toEqual({ affected: 2 });
    expect(await emails(c, bulkWs, "tag=old")).toEqual(["b2@x.io", "b3@x.io", "b4@x.io"]);
    const stage = await c.post(`${bulkWs}/contacts/bulk`, { action: "setStage", ids, value: "customer" });
    expect(stage.body).toEqual({ affected: 5 });
    expect((await c.get(`${bulkWs}/contacts?stage=customer`)).body.pagination.total).toBe(5);
    const attr = await c.post(`${bulkWs}/contacts/bulk`, {
      action: "setAttribute",
      ids: ids.slice(0, 3),
      value: { key: "plan", value: "pro" },
    });
    expect(attr.body).toEqual({ affected: 3 });
    expect(await emails(c, bulkWs, "attributes[plan]=pro")).toEqual(["b0@x.io", "b1@x.io", "b2@x.io"]);
    const unset = await c.post(`${bulkWs}/contacts/bulk`, {
      action: "setAttribute",
      ids: ids.slice(0, 1),
      value: { key: "plan", value: null },
    });
    expect(unset.body).toEqual({ affected: 1 });
    await probe.waitFor((e) => e.type === "contact.updated" && e.data.contactId === ids[0], 4);
  });

  test("bad value or neither ids nor filter is 400; other workspace's ids are untouched", async () => {
    expect(
      (await c.post(`${bulkWs}/contacts/bulk`, { action: "setStage", ids, value: "astronaut" })).status,
    ).toBe(400);
    expect((await c.post(`${bulkWs}/contacts/bulk`, { action: "tag", ids, value: "" })).status).toBe(400);
    expect((await c.post(`${bulkWs}/contacts/bulk`, { action: "tag", value: "x" })).status).toBe(400);
    expect((await c.post(`${bulkWs}/contacts/bulk`, { action: "explode", ids })).status).toBe(400);
    expect((await client.post(`${ctx.ws}/contacts/bulk`, { action: "delete", ids })).body).toEqual({
      affected: 0,
    });
    expect((await c.get(`${bulkWs}/contacts`)).body.pagination.total).toBe(5);
  });

  test("a filter runs as a job; delete needs contacts.delete", async () => {
    const res = await c.post(`${bulkWs}/contacts/bulk`, {
      action: "tag",
      filter: { search: "b1@" },
      value: "filtered",
    });
    expect(res.status).toBe(202);
    const job = await finishedJob(c, bulkWs, res.body.jobId);
    expect(job).toMatchObject({
      type: "contacts.bulk",
      status: "completed",
      result: { action: "tag", affected: 1 },
    });
    expect(await emails(c, bulkWs, "tag=filtered")).toEqual(["b1@x.io"]);

    const writeKey = (await c.post(`${bulkWs}/keys`, { name: "w", scopes: ["contacts.write"] })).body.key;
    const denied = await app
      .http()
      .post(`${bulkWs}/contacts/bulk`, { action: "delete", ids }, { bearer: writeKey });
    expect(denied.status).toBe(403);
    const del = await c.post(`${bulkWs}/contacts/bulk`, { action: "delete", ids: ids.slice(0, 2) });
    expect(del.body).toEqual({ affected: 2 });
    await probe.waitFor((e) => e.type === "contact.deleted" && e.data.contactId === ids[0]);
    expect((await c.get(`${bulkWs}/contacts`)).body.pagination.total).toBe(3);
  });

  test("more than 1,000 ids run as a job", async () => {
    const many = [...ids, ...Array.from({ length: 1200 }, (_, i) => `nope-${i}`)];
    const res = await c.post(`${bulkWs}/contacts/bulk`, { action: "tag", ids: many, value: "big" });
    expect(res.status).toBe(202);
    const job = await finishedJob(c, bulkWs, res.body.jobId);
    expect(job.result).toEqual({ action: "tag", affected: 3 });
  });
});

describe("ingest", () => {
  test("upserts by email or externalId, reports failures by index, emailOptOut emits unsubscribe.email with source ingest", async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    const c = fresh.owner.client;
    await c.post(`${fresh.ws}/contacts`, { email: "known@x.io", firstName: "Old", attributes: { a: 1 } });
    const res = await c.post(`${fresh.ws}/contacts/ingest`, {
      contacts: [
        { email: "Known@x.io", firstName: "New", attributes: { b: 2 } },
        { externalId: "u-1", firstName: "Ext", emailOptOut: true },
        { email: "bad" },
        { phone: "+14155552671" },
        { email: "fresh@x.io", emailOptOut: true, workspaceId: "evil", id: "forced" },
        "nope",
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.created).toBe(2);
    expect(res.body.updated).toBe(1);
    expect(res.body.failed.map((f: { index: number }) => f.index)).toEqual([2, 3, 5]);

    const known = (await c.get(`${fresh.ws}/contacts?search=known`)).body.data[0];
    const staged = await c.post(`${fresh.ws}/contacts/ingest`, {
      contacts: [{ email: "known@x.io", stage: "customer" }],
    });
    expect(staged.body).toEqual({ created: 0, updated: 1, failed: [] });
    const history = (await c.get(`${fresh.ws}/contacts/${known.id}/stages`)).body;
    expect(history.stage).toBe("customer");
    expect(history.history).toEqual([
      expect.objectContaining({
        from: null,
        to: "customer",
        reason: "ingest",
        changedBy: { type: "user", id: fresh.owner.id },
      }),
    ]);
    expect(known).toMatchObject({ firstName: "New", attributes: { a: 1, b: 2 } });
    const freshOne = (await c.get(`${fresh.ws}/contacts?search=fresh@`)).body.data[0];
    expect(freshOne.id).not.toBe("forced");
    expect(freshOne.consent.email).toMatchObject({ status: "opted_out", source: "ingest" });
    const [event] = await probe.waitFor(
      (e) => e.type === "unsubscribe.email" && e.data.contactId === freshOne.id,
    );
    expect(event.data).toMatchObject({ channel: "email", source: "ingest", email: "fresh@x.io" });

    // Again: an update, and no second opt-out fact.
    const again = await c.post(`${fresh.ws}/contacts/ingest`, {
      contacts: [{ email: "fresh@x.io", emailOptOut: true }],
    });
    expect(again.body).toEqual({ created: 0, updated: 1, failed: [] });
    expect(
      probe.seen.filter((e) => e.type === "unsubscribe.email" && e.data.contactId === freshOne.id),
    ).toHaveLength(1);

    expect((await c.post(`${fresh.ws}/contacts/ingest`, { contacts: [] })).status).toBe(400);
    expect(
      (
        await c.post(`${fresh.ws}/contacts/ingest`, {
          contacts: Array.from({ length: 1001 }, (_, i) => ({ email: `${i}@x.io` })),
        })
      ).status,
    ).toBe(400);
  });
});
