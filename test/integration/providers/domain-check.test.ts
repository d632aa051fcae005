import dns2 from "dns2";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** `POST {ws}/providers/email/{id}/domain-check` against a DNS server started here (dns2 on 127.0.0.1). */

const ZONE: Record<string, string[]> = {
  "good.test": ["v=spf1 include:_spf.mail.test ~all"],
  "default._domainkey.good.test": ["v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC1"],
  "_dmarc.good.test": ["v=DMARC1; p=quarantine; rua=mailto:dmarc@good.test"],
  "bad.test": ["v=spf1 include:a.test -all", "v=spf1 mx -all"],
  "s1._domainkey.bad.test": ["v=DKIM1; p="],
  "_dmarc.bad.test": ["v=DMARC1; p=sometimes"],
};

let server: ReturnType<typeof dns2.createServer>;
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let providerId: string;

beforeAll(async () => {
  server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = dns2.Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      // dns2's types leave out a TXT record's `data`, which its encoder reads.
      for (const data of ZONE[question.name.toLowerCase()] ?? [])
        response.answers.push(
          dns2.Packet.createResourceFromQuestion(question, {
            type: dns2.Packet.TYPE.TXT,
            class: dns2.Packet.CLASS.IN,
            ttl: 60,
            data,
          } as never),
        );
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: "127.0.0.1" } });
  app = await startApp({
    services: ["api", "auth", "workspaces", "providers"],
    env: { DNS_SERVERS: `127.0.0.1:${addresses.udp!.port}` },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  providerId = (
    await ctx.owner.client.post(`${ctx.ws}/providers/email`, {
      type: "smtp",
      config: { host: "127.0.0.1", port: 25 },
    })
  ).body.id;
});

afterAll(async () => {
  await app?.stop();
  await server?.close();
});

const check = (body: Record<string, unknown>) =>
  ctx.owner.client.post(`${ctx.ws}/providers/email/${providerId}/domain-check`, body);

test("every record present and well formed passes", async () => {
  const res = await check({ domain: "good.test" });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    domain: "good.test",
    spf: { status: "pass", record: "v=spf1 include:_spf.mail.test ~all", problem: null },
    dkim: {
      status: "pass",
      record: "v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC1",
      problem: null,
    },
    dmarc: { status: "pass", record: "v=DMARC1; p=quarantine; rua=mailto:dmarc@good.test", problem: null },
  });
});

test("several, revoked and malformed records are invalid, saying why; absent ones are missing", async () => {
  const bad = await check({ domain: "bad.test", dkimSelector: "s1" });
  expect(bad.body).toMatchObject({
    spf: { status: "invalid", problem: expect.stringMatching(/Several SPF records/) },
    dkim: { status: "invalid", record: "v=DKIM1; p=", problem: expect.stringMatching(/revoked/) },
    dmarc: { status: "invalid", problem: "Unknown policy p=sometimes" },
  });
  const none = await check({ domain: "nothing.test" });
  expect(none.body).toMatchObject({
    spf: { status: "missing", record: null },
    dkim: { status: "missing", record: null },
    dmarc: { status: "missing", record: null },
  });
});

test("the domain defaults to settings.sender.fromEmail's; bad input is 400, another channel's provider 404", async () => {
  const c = ctx.owner.client;
  const unset = await check({});
  expect([unset.status, unset.body.details?.[0]?.field]).toEqual([400, "domain"]);
  await c.patch(ctx.ws, { settings: { sender: { fromEmail: "news@Good.test" } } });
  expect((await check({})).body).toMatchObject({ domain: "good.test", spf: { status: "pass" } });
  expect((await check({ domain: "not a domain" })).status).toBe(400);
  expect((await check({ domain: "good.test", dkimSelector: "a b" })).status).toBe(400);
  const sms = await c.post(`${ctx.ws}/providers/sms`, {
    type: "smsapi1",
    config: { accountSid: "A", authToken: "t", from: "+1555" },
  });
  expect(
    (await c.post(`${ctx.ws}/providers/email/${sms.body.id}/domain-check`, { domain: "good.test" })).status,
  ).toBe(404);
});
