import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { PUBLIC_DIR } from "../../lib/paths";

/**
 * The service worker sites host (public/cms-push-worker.js), run in a VM
 * with a stand-in `self`: each push shows its notification, a click opens
 * its url (the tracked link) and closes it.
 */

type Handler = (event: Record<string, unknown>) => void;

function loadWorker() {
  const handlers: Record<string, Handler> = {};
  const shown: Array<{ title: string; options: Record<string, unknown> }> = [];
  const opened: string[] = [];
  const self = {
    addEventListener: (type: string, handler: Handler) => (handlers[type] = handler),
    registration: {
      showNotification: (title: string, options: Record<string, unknown>) => {
        shown.push({ title, options });
        return Promise.resolve();
      },
    },
    clients: {
      openWindow: (url: string) => {
        opened.push(url);
        return Promise.resolve(null);
      },
    },
  };
  vm.runInNewContext(fs.readFileSync(path.join(PUBLIC_DIR, "cms-push-worker.js"), "utf8"), { self });
  const waited: Array<Promise<unknown>> = [];
  const fire = async (type: string, event: Record<string, unknown>) => {
    handlers[type]({ ...event, waitUntil: (p: Promise<unknown>) => waited.push(p) });
    await Promise.all(waited);
  };
  return { fire, shown, opened };
}

const pushed = (payload: string) => ({
  data: { json: () => JSON.parse(payload) as unknown, text: () => payload },
});

test("a push shows its title, body, icon and image, tagged by its message; the url kept for the click", async () => {
  const worker = loadWorker();
  const payload = {
    messageId: "m1",
    title: "Sale",
    body: "Half price",
    url: "https://cms.example.com/api/messages/m1/track?u=abc&s=sig",
    icon: "https://shop.example.com/icon.png",
    image: "https://shop.example.com/banner.png",
  };
  await worker.fire("push", pushed(JSON.stringify(payload)));
  expect(worker.shown).toEqual([
    {
      title: "Sale",
      options: {
        body: "Half price",
        icon: payload.icon,
        image: payload.image,
        tag: "m1",
        data: { url: payload.url },
      },
    },
  ]);
  await worker.fire("push", pushed(JSON.stringify({ title: "Plain", body: "No pictures" })));
  expect(worker.shown[1]).toEqual({ title: "Plain", options: { body: "No pictures", data: { url: null } } });
  await worker.fire("push", pushed("not json"));
  expect(worker.shown[2]).toEqual({ title: "", options: { body: "not json", data: { url: null } } });
});

test("a click closes the notification and opens its url; one without a url opens nothing", async () => {
  const worker = loadWorker();
  let closed = 0;
  const notification = (url: string | null) => ({ close: () => (closed += 1), data: { url } });
  await worker.fire("notificationclick", { notification: notification("https://cms.example.com/t") });
  await worker.fire("notificationclick", { notification: notification(null) });
  expect(worker.opened).toEqual(["https://cms.example.com/t"]);
  expect(closed).toBe(2);
});
