// The web push service worker. A service worker must come from the site's own origin, so the
// site hosts this file (at its root: /cms-push-worker.js, or where the script tag's
// data-push-worker says):
//   curl -o cms-push-worker.js {PUBLIC_URL}/cms-push-worker.js
// It shows each notification the workspace pushes (title, body, icon, image) and, on a click,
// opens its url: the service's tracked link, which counts the click and leads on to the page.
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
