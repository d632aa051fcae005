// The website script: <script src="{PUBLIC_URL}/cms.js" data-key="pk_..." async></script>.
// Records page views (anonymous by a session id; the contact's once one of the workspace's
// forms has identified the visitor) and shows the workspace's focus items by their trigger
// (load, delay, scroll depth, exit intent) and rules (page addresses, views per visitor).
(function () {
  var script = document.currentScript;
  if (!script) return;
  var base = new URL(script.src).origin;
  var key = script.getAttribute("data-key");
  // On the workspace's landing pages (sandboxed, Origin: null): the token that says the page is its own.
  var pageToken = document.querySelector('meta[name="cms-page"]');
  // The browser's storage, or one kept in memory for this page where there is none: a sandboxed
  // page (the service's landing pages) throws on reading it, and a browser may refuse it.
  var memory = {};
  function storage(name) {
    try {
      var real = window[name];
      real.getItem("cms_session");
      return real;
    } catch (e) {
      return (memory[name] = memory[name] || {
        items: {},
        getItem: function (k) {
          return Object.prototype.hasOwnProperty.call(this.items, k) ? this.items[k] : null;
        },
        setItem: function (k, v) {
          this.items[k] = String(v);
        },
      });
    }
  }
  var store = storage("localStorage");
  var session = storage("sessionStorage").getItem("cms_session");
  if (!session) {
    session = Math.random().toString(36).slice(2) + Date.now().toString(36);
    storage("sessionStorage").setItem("cms_session", session);
  }
  // The forms on this page send it with a submission (form.js).
  window.cmsSessionId = session;
  var STYLES = {
    bar: "position:fixed;top:0;left:0;right:0;z-index:2147483000;padding:8px 64px 8px 16px;background:#1c1f26;color:#fff;font:14px/1.4 system-ui,sans-serif",
    modal:
      "position:fixed;top:50%;left:50%;transform:translate(-50%,-50%);z-index:2147483000;max-width:min(480px,92vw);padding:24px;background:#fff;color:#1c1f26;border-radius:8px;box-shadow:0 8px 40px rgba(0,0,0,.35)",
    slide_in:
      "position:fixed;right:16px;bottom:16px;z-index:2147483000;max-width:min(360px,92vw);padding:20px;background:#fff;color:#1c1f26;border-radius:8px;box-shadow:0 4px 24px rgba(0,0,0,.25)",
  };

  function visitor() {
    return store.getItem("cms_visitor");
  }
  function endpoint(path, params) {
    var query = new URLSearchParams(params || {});
    query.set("key", key);
    if (pageToken) query.set("page", pageToken.content);
    return base + path + "?" + query;
  }
  function track(type, metadata) {
    var body = new URLSearchParams({
      type: type,
      sessionId: session,
      pageUrl: location.href,
      referrer: document.referrer,
    });
    var query = new URLSearchParams(location.search);
    [
      ["utm_source", "utmSource"],
      ["utm_medium", "utmMedium"],
      ["utm_campaign", "utmCampaign"],
    ].forEach(function (pair) {
      if (query.get(pair[0])) body.set(pair[1], query.get(pair[0]));
    });
    if (visitor()) body.set("visitorToken", visitor());
    if (metadata) body.set("metadata", JSON.stringify(metadata));
    return fetch(endpoint("/api/script/event"), {
      method: "POST",
      body: body,
      keepalive: true,
      headers: { Accept: "application/json" },
    }).catch(function () {});
  }

  // A form of the workspace answered: the visitor is now known by its token.
  document.addEventListener("cms:submitted", function (event) {
    if (event.detail && event.detail.visitorToken) store.setItem("cms_visitor", event.detail.visitorToken);
  });

  function shown(id) {
    try {
      return JSON.parse(store.getItem("cms_seen_" + id) || "[]");
    } catch (e) {
      return [];
    }
  }
  function allowed(item) {
    // A visitor who sent an item's form has answered it: it is not shown again.
    if (item.formId && store.getItem("cms_done_" + item.id)) return false;
    var urls = item.rules.urls;
    if (
      urls.length &&
      !urls.some(function (part) {
        return location.href.indexOf(part) >= 0;
      })
    )
      return false;
    var frequency = item.rules.frequency;
    if (!frequency) return true;
    var since = Date.now() - frequency.perDays * 864e5;
    return (
      shown(item.id).filter(function (at) {
        return at > since;
      }).length < frequency.maxViews
    );
  }
  function show(item) {
    if (document.getElementById("cms-focus-" + item.id)) return;
    store.setItem("cms_seen_" + item.id, JSON.stringify(shown(item.id).concat(Date.now()).slice(-100)));
    var box = document.createElement("div");
    box.id = "cms-focus-" + item.id;
    box.className = "cms-focus cms-focus-" + item.type;
    box.setAttribute("role", item.type === "modal" ? "dialog" : "region");
    box.setAttribute("aria-label", item.name);
    box.style.cssText = STYLES[item.type] || STYLES.slide_in;
    var content = document.createElement("div");
    content.innerHTML = item.content;
    box.appendChild(content);
    var close = document.createElement("button");
    close.type = "button";
    close.textContent = "\u00d7";
    close.setAttribute("aria-label", "Close");
    close.style.cssText =
      "position:absolute;top:4px;right:8px;border:0;background:none;color:inherit;font-size:22px;cursor:pointer";
    close.onclick = function () {
      box.remove();
    };
    box.appendChild(close);
    box.addEventListener("cms:submitted", function () {
      store.setItem("cms_done_" + item.id, "1");
      track("focus_item.conversion", { focusItemId: item.id });
    });
    document.body.appendChild(box);
    if (item.type === "bar") slim(box, content, item);
    else if (item.formId) drawForm(box, item.formId);
    track("focus_item.view", { focusItemId: item.id });
  }
  function drawForm(holder, formId) {
    var embed = document.createElement("script");
    embed.src = base + "/api/forms/" + encodeURIComponent(formId) + "/embed";
    holder.appendChild(embed);
  }
  // A bar is one slim line over the top of the site: its content without margins, and its
  // form (if it has one) drawn in a panel below it only when the visitor asks for it.
  function slim(box, content, item) {
    Array.prototype.forEach.call(content.children, function (element) {
      element.style.margin = "0";
    });
    if (!item.formId) return;
    var panel = document.createElement("div");
    panel.hidden = true;
    panel.style.cssText =
      "max-width:420px;margin-top:8px;padding:12px 16px;background:#fff;color:#1c1f26;border-radius:6px";
    var open = document.createElement("button");
    open.type = "button";
    open.textContent = "\u25be";
    open.setAttribute("aria-label", "Show the form");
    open.setAttribute("aria-expanded", "false");
    open.style.cssText =
      "position:absolute;top:4px;right:36px;border:0;background:none;color:inherit;font-size:20px;cursor:pointer";
    open.onclick = function () {
      panel.hidden = !panel.hidden;
      open.setAttribute("aria-expanded", String(!panel.hidden));
      if (!panel.hidden && !panel.firstChild) drawForm(panel, item.formId);
    };
    box.appendChild(open);
    box.appendChild(panel);
  }
  function arm(item) {
    if (!allowed(item)) return;
    var on = item.trigger.on;
    var value = item.trigger.value;
    if (on === "load") show(item);
    else if (on === "delay")
      setTimeout(function () {
        show(item);
      }, value * 1000);
    else if (on === "scroll") {
      var check = function () {
        var page = document.documentElement;
        if (((page.scrollTop + innerHeight) / page.scrollHeight) * 100 >= value) {
          removeEventListener("scroll", check);
          show(item);
        }
      };
      addEventListener("scroll", check, { passive: true });
      check();
    } else if (on === "exit_intent") {
      var leave = function (event) {
        if (!event.relatedTarget && event.clientY <= 0) {
          document.removeEventListener("mouseout", leave);
          show(item);
        }
      };
      document.addEventListener("mouseout", leave);
    }
  }

  // Elements naming a dynamic content slot get the visitor's content, and focus items saved
  // while the page is open arrive, over one event stream (only on pages with slots).
  var slotted = document.querySelectorAll("[data-cms-slot]");
  if (slotted.length && window.EventSource) {
    var slots = Array.prototype.map.call(slotted, function (element) {
      return element.getAttribute("data-cms-slot");
    });
    var query = { slots: slots.join(",") };
    if (visitor()) query.visitorToken = visitor();
    var stream = new EventSource(endpoint("/api/script/stream", query));
    stream.addEventListener("dynamic_content", function (event) {
      var content = JSON.parse(event.data);
      document
        .querySelectorAll('[data-cms-slot="' + CSS.escape(content.slot) + '"]')
        .forEach(function (element) {
          element.innerHTML = content.html;
        });
    });
    stream.addEventListener("focus_item", function (event) {
      arm(JSON.parse(event.data));
    });
  }

  track("page_view");
  var siteConfig = fetch(endpoint("/api/script/config", visitor() ? { visitorToken: visitor() } : {})).then(
    function (res) {
      return res.json();
    },
  );
  siteConfig
    .then(function (config) {
      config.focusItems.forEach(arm);
    })
    .catch(function () {});

  // Web push: the page calls cms.push.subscribe() (from a click: browsers ask for permission only
  // on a gesture). It asks for permission, registers the service worker the site hosts at its own
  // origin (data-push-worker, default /cms-push-worker.js) and stores the browser's subscription
  // with the workspace (the visitor's contact's once a form identified them). It resolves with the
  // stored subscription, or rejects saying why (unsupported, refused, no push provider).
  function keyBytes(text) {
    var raw = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return bytes;
  }
  window.cms = window.cms || {};
  window.cms.push = {
    supported: function () {
      return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
    },
    subscribe: function (options) {
      if (!this.supported()) return Promise.reject(new Error("This browser has no web push"));
      var worker =
        (options && options.worker) || script.getAttribute("data-push-worker") || "/cms-push-worker.js";
      return Promise.all([siteConfig, Notification.requestPermission()])
        .then(function (answers) {
          if (!answers[0].vapidPublicKey) throw new Error("The workspace has no web push provider");
          if (answers[1] !== "granted") throw new Error("Notifications were not allowed");
          var applicationServerKey = keyBytes(answers[0].vapidPublicKey);
          // The worker learns where to store a subscription its push service renews (pushsubscriptionchange).
          var renewals = encodeURIComponent(endpoint("/api/script/push"));
          return navigator.serviceWorker
            .register(worker + (worker.indexOf("?") < 0 ? "?" : "&") + "cms=" + renewals)
            .then(function () {
              return navigator.serviceWorker.ready;
            })
            .then(function (registration) {
              var subscribe = function () {
                return registration.pushManager.subscribe({
                  userVisibleOnly: true,
                  applicationServerKey: applicationServerKey,
                });
              };
              // A subscription made with an older key of the workspace is replaced.
              return subscribe().catch(function () {
                return registration.pushManager
                  .getSubscription()
                  .then(function (old) {
                    return old && old.unsubscribe();
                  })
                  .then(subscribe);
              });
            });
        })
        .then(function (subscription) {
          var body = new URLSearchParams({ subscription: JSON.stringify(subscription) });
          if (visitor()) body.set("visitorToken", visitor());
          return fetch(endpoint("/api/script/push"), {
            method: "POST",
            body: body,
            headers: { Accept: "application/json" },
          });
        })
        .then(function (res) {
          if (!res.ok) throw new Error("The subscription was not stored (" + res.status + ")");
          return res.json();
        });
    },
  };
})();
