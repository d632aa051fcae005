import http from "node:http";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import type { EventStreams } from "../../../services/content/event-streams";

/**
 * The website script's event stream through the gateway: `ready`, the
 * page's dynamic content for the visitor, focus items as they are saved,
 * heartbeats, a visitor who leaves leaving the set, and every stream ended
 * when the service stops.
 */

let app: TestApp;
let stopped = false;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let key: string;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms", "content"],
    env: { SCRIPT_HEARTBEAT_MS: "200" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  key = (await ctx.owner.client.get(ctx.ws)).body.siteKey;
});

afterAll(async () => {
  if (!stopped) await app?.stop();
});

interface Received {
  events: Array<{ event: string; data: any }>;
  ended: Promise<void>;
  close(): void;
}

/** Open the stream and collect its events as they come. */
function listen(query: string): Promise<Received> {
  return new Promise((resolve, reject) => {
    const events: Received["events"] = [];
    const req = http.get(`${app.baseUrl}/api/script/stream?${query}`, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
      let buffer = "";
      const ended = new Promise<void>((done) => res.on("end", done));
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        let at: number;
        while ((at = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
          const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? "null");
          events.push({ event, data });
        }
      });
      resolve({ events, ended, close: () => req.destroy() });
    });
    req.on("error", () => undefined);
  });
}

const streamsOf = () =>
  (app.broker.getLocalService("content") as unknown as { streams: EventStreams }).streams;

test("ready, the visitor's dynamic content, focus items as they are saved, pings; a leaving visitor leaves the set", async () => {
  await ctx.owner.client.post(`${ctx.ws}/dynamic-content`, {
    name: "Hero",
    slot: "hero",
    defaultContent: "<p>Hello, visitor</p>",
  });
  const stream = await listen(`key=${key}&slots=hero,missing`);
  await waitFor(async () => stream.events.some((e) => e.event === "dynamic_content") || undefined, 5_000);
  expect(stream.events.slice(0, 2)).toEqual([
    { event: "ready", data: {} },
    { event: "dynamic_content", data: { slot: "hero", html: "<p>Hello, visitor</p>" } },
  ]);

  const item = await ctx.owner.client.post(`${ctx.ws}/focus-items`, {
    name: "Live",
    type: "bar",
    content: "<p>Now live</p>",
    trigger: { on: "load" },
  });
  const pushed = await waitFor(async () => stream.events.find((e) => e.event === "focus_item"), 5_000);
  expect(pushed.data).toMatchObject({ id: item.body.id, name: "Live", content: "<p>Now live</p>" });
  await waitFor(async () => stream.events.some((e) => e.event === "ping") || undefined, 5_000);

  expect(streamsOf().size).toBe(1);
  stream.close();
  await waitFor(async () => streamsOf().size === 0 || undefined, 5_000);
  expect(await listen(`key=pk_unknown`).catch((err: Error) => err.message)).toBe("stream answered 401");
});

test("every stream ends when the service stops", async () => {
  const stream = await listen(`key=${key}`);
  await waitFor(async () => stream.events.length > 0 || undefined, 5_000);
  stopped = true;
  await app.stop();
  await stream.ended;
});
