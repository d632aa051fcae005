// The web push service worker. A service worker must come from the site's own origin, so the
// site hosts this file (at its root: /cms-push-worker.js, or where the script tag's
// data-push-worker says):
//   curl -o cms-push-worker.js {PUBLIC_URL}/cms-push-worker.js
// It shows each notification the workspace pushes (title, body, icon, image) and, on a click,
// opens its url: the service's tracked link, which counts the click and leads on to the page.
// When the push service renews the subscription, it stores the new one with the service.
self.addEventListener("push", function (event) {
  var data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (e) {
    data = { body: event.data.text() };
  }
  var options = { body: data.body || "", data: { url: data.url || null } };
  if (data.icon) options.icon = data.icon;
  if (data.image) options.image = data.image;
  if (data.messageId) options.tag = data.messageId;
  event.waitUntil(self.registration.showNotification(data.title || "", options));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var url = event.notification.data && event.notification.data.url;
  if (url) event.waitUntil(self.clients.openWindow(url));
});

// The push service renewed (or dropped) the subscription: subscribe again with the workspace's key
// and store the new one where the website script said (?cms=), naming the old one with its auth
// secret, so the new one keeps the old one's contact and the old one stops receiving.
self.addEventListener("pushsubscriptionchange", function (event) {
  var store = new URL(self.location.href).searchParams.get("cms");
  if (!store) return;
  var old = event.oldSubscription && event.oldSubscription.toJSON();
  event.waitUntil(
    renewed(event, store).then(function (subscription) {
      var body = new URLSearchParams({ subscription: JSON.stringify(subscription) });
      if (old && old.keys) {
        body.set("previousEndpoint", old.endpoint);
        body.set("previousAuth", old.keys.auth);
      }
      return fetch(store, { method: "POST", body: body });
    }),
  );
});

// The new subscription: the event's, else one made with the old one's key, else with the key the
// workspace's site config names (browsers may give neither).
function renewed(event, store) {
  if (event.newSubscription) return Promise.resolve(event.newSubscription);
  var options = event.oldSubscription && event.oldSubscription.options;
  if (options && options.applicationServerKey) return self.registration.pushManager.subscribe(options);
  var config = new URL(store);
  config.pathname = "/api/script/config";
  return fetch(config.toString())
    .then(function (res) {
      return res.json();
    })
    .then(function (site) {
      var raw = atob(site.vapidPublicKey.replace(/-/g, "+").replace(/_/g, "/"));
      var key = new Uint8Array(raw.length);
      for (var i = 0; i < raw.length; i++) key[i] = raw.charCodeAt(i);
      return self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    });
}
