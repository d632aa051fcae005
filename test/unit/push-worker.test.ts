import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { PUBLIC_DIR } from "../../lib/paths";

/**
 * The service worker sites host (public/cms-push-worker.js), run in a VM
 * with a stand-in `self`: each push shows its notification, a click opens
 * its url (the tracked link) and closes it; a renewed subscription is stored
 * where the website script registered the worker to store it.
 */

type Handler = (event: Record<string, unknown>) => void;

const STORE = "https://cms.example.com/api/script/push?key=pk_site";
const WORKER_URL = `https://www.acme.test/cms-push-worker.js?cms=${encodeURIComponent(STORE)}`;
const renewedJson = {
  endpoint: "https://push.example.com/new",
  expirationTime: null,
  keys: { p256dh: "BNewPublicKey_0123456789", auth: "newAuth0123456789" },
};

function loadWorker(workerUrl = WORKER_URL, siteKey = Buffer.alloc(65, 7).toString("base64url")) {
  const handlers: Record<string, Handler> = {};
  const shown: Array<{ title: string; options: Record<string, unknown> }> = [];
  const opened: string[] = [];
  const subscribedWith: Array<{ userVisibleOnly: boolean; applicationServerKey: Uint8Array }> = [];
  const fetched: Array<{ url: string; body?: URLSearchParams }> = [];
  const self = {
    location: { href: workerUrl },
    addEventListener: (type: string, handler: Handler) => (handlers[type] = handler),
    registration: {
      showNotification: (title: string, options: Record<string, unknown>) => {
        shown.push({ title, options });
        return Promise.resolve();
      },
      pushManager: {
        subscribe: (options: { userVisibleOnly: boolean; applicationServerKey: Uint8Array }) => {
          subscribedWith.push(options);
          return Promise.resolve({ toJSON: () => renewedJson });
        },
      },
    },
    clients: {
      openWindow: (url: string) => {
        opened.push(url);
        return Promise.resolve(null);
      },
    },
  };
  const fetch = (url: string, init?: { body?: URLSearchParams }) => {
    fetched.push({ url, body: init?.body });
    return Promise.resolve({ ok: true, json: () => Promise.resolve({ vapidPublicKey: siteKey }) });
  };
  vm.runInNewContext(fs.readFileSync(path.join(PUBLIC_DIR, "cms-push-worker.js"), "utf8"), {
    self,
    fetch,
    URL,
    URLSearchParams,
    atob,
    Uint8Array,
    JSON,
    Promise,
  });
  const waited: Array<Promise<unknown>> = [];
  const fire = async (type: string, event: Record<string, unknown>) => {
    handlers[type]({ ...event, waitUntil: (p: Promise<unknown>) => waited.push(p) });
    await Promise.all(waited);
  };
  return { fire, shown, opened, subscribedWith, fetched };
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

const oldSubscription = (options: object | null) => ({
  options,
  toJSON: () => ({
    endpoint: "https://push.example.com/old",
    keys: { p256dh: "BOldPublicKey_0123456789", auth: "oldAuth0123456789" },
  }),
});

test("a renewal subscribes again with the old key and stores the new subscription naming the old one by its secret", async () => {
  const worker = loadWorker();
  const key = new Uint8Array(65).fill(3);
  await worker.fire("pushsubscriptionchange", {
    oldSubscription: oldSubscription({ userVisibleOnly: true, applicationServerKey: key }),
    newSubscription: null,
  });
  expect(worker.subscribedWith).toEqual([{ userVisibleOnly: true, applicationServerKey: key }]);
  expect(worker.fetched.map((f) => f.url)).toEqual([STORE]);
  const body = worker.fetched[0].body!;
  expect(JSON.parse(body.get("subscription")!)).toEqual(renewedJson);
  expect([body.get("previousEndpoint"), body.get("previousAuth")]).toEqual([
    "https://push.example.com/old",
    "oldAuth0123456789",
  ]);
});

test("the browser's new subscription is stored as it is; with neither, the workspace's key is read from the site config", async () => {
  const given = loadWorker();
  await given.fire("pushsubscriptionchange", {
    oldSubscription: null,
    newSubscription: { toJSON: () => renewedJson },
  });
  expect(given.subscribedWith).toEqual([]);
  expect(given.fetched.map((f) => [f.url, f.body?.get("previousEndpoint") ?? null])).toEqual([[STORE, null]]);

  const siteKey = Buffer.alloc(65, 9);
  const neither = loadWorker(WORKER_URL, siteKey.toString("base64url"));
  await neither.fire("pushsubscriptionchange", { oldSubscription: null, newSubscription: null });
  expect(neither.fetched.map((f) => f.url)).toEqual([
    "https://cms.example.com/api/script/config?key=pk_site",
    STORE,
  ]);
  expect(Buffer.from(neither.subscribedWith[0].applicationServerKey)).toEqual(siteKey);
  expect(neither.subscribedWith[0].userVisibleOnly).toBe(true);
});

test("a worker registered without the service's address stores nothing", async () => {
  const worker = loadWorker("https://www.acme.test/cms-push-worker.js");
  await worker.fire("pushsubscriptionchange", { oldSubscription: null, newSubscription: null });
  expect([...worker.fetched, ...worker.subscribedWith]).toEqual([]);
});
