import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { PUBLIC_DIR } from "../../lib/paths";

/**
 * `cms.push.subscribe()` of the website script (public/cms.js), run in a VM
 * with a stand-in browser (no Chromium's push service is reachable from a
 * test): it asks for permission, registers the site's own worker, subscribes
 * with the workspace's key and stores the subscription form-encoded (no
 * CORS preflight), with the visitor's token; it refuses clearly otherwise.
 */

const KEY = Buffer.alloc(65, 4);
const subscription = {
  endpoint: "https://push.example.com/abc",
  expirationTime: null,
  keys: { p256dh: "BPublicKeyOfTheBrowser_0123456789", auth: "authSecret0123456789" },
};

function loadScript(options: { vapidPublicKey: string | null; permission: string; worker?: string }) {
  const posted: Array<{ url: string; body: URLSearchParams }> = [];
  const registered: string[] = [];
  const keys: Uint8Array[] = [];
  const stored = new Map<string, string>([["cms_visitor", "visitor-token-1"]]);
  const storage = {
    getItem: (k: string) => stored.get(k) ?? null,
    setItem: (k: string, v: string) => stored.set(k, v),
  };
  const registration = {
    pushManager: {
      subscribe: (o: { applicationServerKey: Uint8Array }) => {
        keys.push(o.applicationServerKey);
        return Promise.resolve({ toJSON: () => subscription });
      },
    },
  };
  const context: Record<string, unknown> = {
    URL,
    URLSearchParams,
    atob,
    Uint8Array,
    Promise,
    JSON,
    Error,
    Date,
    Math,
    Object,
    Array,
    setTimeout,
    localStorage: storage,
    sessionStorage: storage,
    location: { href: "https://www.acme.test/", search: "" },
    document: {
      currentScript: {
        src: "https://cms.example.com/cms.js",
        getAttribute: (name: string) =>
          name === "data-key" ? "pk_site" : name === "data-push-worker" ? (options.worker ?? null) : null,
      },
      referrer: "",
      querySelector: () => null,
      querySelectorAll: () => [],
      addEventListener: () => undefined,
    },
    navigator: {
      serviceWorker: {
        register: (worker: string) => {
          registered.push(worker);
          return Promise.resolve(registration);
        },
        ready: Promise.resolve(registration),
      },
    },
    PushManager: function PushManager() {},
    Notification: { requestPermission: () => Promise.resolve(options.permission) },
    fetch: (url: string, init?: { body?: URLSearchParams }) => {
      if (url.includes("/api/script/config"))
        return Promise.resolve({
          json: () => Promise.resolve({ focusItems: [], forms: [], vapidPublicKey: options.vapidPublicKey }),
        });
      if (url.includes("/api/script/push")) {
        posted.push({ url, body: init!.body! });
        return Promise.resolve({ ok: true, json: () => Promise.resolve({ id: "sub-1", type: "web" }) });
      }
      return Promise.resolve({ ok: true });
    },
  };
  context.window = context;
  vm.runInNewContext(fs.readFileSync(path.join(PUBLIC_DIR, "cms.js"), "utf8"), context);
  const cms = context.cms as { push: { supported(): boolean; subscribe(o?: object): Promise<unknown> } };
  return { cms, posted, registered, keys };
}

test("subscribe: permission, the site's worker, the workspace's key, the subscription stored with the visitor", async () => {
  const page = loadScript({ vapidPublicKey: KEY.toString("base64url"), permission: "granted" });
  expect(page.cms.push.supported()).toBe(true);
  expect(await page.cms.push.subscribe()).toEqual({ id: "sub-1", type: "web" });
  // The worker is told where renewed subscriptions go (its pushsubscriptionchange).
  const renewals = encodeURIComponent("https://cms.example.com/api/script/push?key=pk_site");
  expect(page.registered).toEqual([`/cms-push-worker.js?cms=${renewals}`]);
  expect(Buffer.from(page.keys[0])).toEqual(KEY);
  const [post] = page.posted;
  expect(post.url).toBe("https://cms.example.com/api/script/push?key=pk_site");
  expect(JSON.parse(post.body.get("subscription")!)).toEqual(subscription);
  expect(post.body.get("visitorToken")).toBe("visitor-token-1");
});

test("the worker's path comes from the call, else the script tag", async () => {
  const tagged = loadScript({
    vapidPublicKey: KEY.toString("base64url"),
    permission: "granted",
    worker: "/sw/push.js",
  });
  await tagged.cms.push.subscribe();
  await tagged.cms.push.subscribe({ worker: "/other.js?v=2" });
  const renewals = encodeURIComponent("https://cms.example.com/api/script/push?key=pk_site");
  expect(tagged.registered).toEqual([`/sw/push.js?cms=${renewals}`, `/other.js?v=2&cms=${renewals}`]);
});

test("no push provider, or permission refused: rejected saying why, nothing registered or stored", async () => {
  const none = loadScript({ vapidPublicKey: null, permission: "granted" });
  await expect(none.cms.push.subscribe()).rejects.toThrow("no web push provider");
  const refused = loadScript({ vapidPublicKey: KEY.toString("base64url"), permission: "denied" });
  await expect(refused.cms.push.subscribe()).rejects.toThrow("Notifications were not allowed");
  expect([...none.registered, ...refused.registered, ...none.posted, ...refused.posted]).toEqual([]);
});
