// Forms drawn by the service (the hosted page /f/{formId} and the embed script): fills
// hidden fields named like the page URL's parameters (utm_source, ...) and the page's
// address, then submits with fetch and shows the answer in place. Without JavaScript
// the same form posts and the service answers with a page or a redirect.
(function (global) {
  function enhance(form) {
    var params = new URLSearchParams(global.location.search);
    form.querySelectorAll("input[data-from-url]").forEach(function (input) {
      if (params.has(input.name)) input.value = params.get(input.name);
    });
    form.querySelector("input[name=pageUrl]").value = global.location.href;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var button = form.querySelector("button[type=submit]");
      form.querySelectorAll("[data-error-for]").forEach(function (p) {
        p.textContent = "";
      });
      var general = form.querySelector("[data-error-for=_form]");
      button.disabled = true;
      var body = new URLSearchParams(new FormData(form));
      // The website script's session: the submission makes its anonymous page views the contact's.
      var session = websiteSession();
      if (session) body.set("sessionId", session);
      fetch(form.action, { method: "POST", headers: { Accept: "application/json" }, body: body })
        .then(function (res) {
          return res.json().then(function (body) {
            return { ok: res.ok, body: body };
          });
        })
        .then(
          function (answer) {
            button.disabled = false;
            if (answer.ok) {
              // The website script (cms.js) learns who the visitor is from this.
              form.dispatchEvent(new CustomEvent("cms:submitted", { bubbles: true, detail: answer.body }));
              if (answer.body.redirectUrl) {
                global.location.assign(answer.body.redirectUrl);
                return;
              }
              var done = document.createElement("p");
              done.setAttribute("role", "status");
              done.className = "cms-form-done";
              done.textContent = answer.body.message;
              form.replaceWith(done);
              return;
            }
            var shown = false;
            (answer.body.details || []).forEach(function (detail) {
              var slot = form.querySelector('[data-error-for="' + CSS.escape(detail.field) + '"]');
              if (slot) {
                slot.textContent = detail.message;
                shown = true;
              }
            });
            if (!shown) general.textContent = answer.body.error || "Could not send; please try again.";
          },
          function () {
            button.disabled = false;
            general.textContent = "Could not send; please try again.";
          },
        );
    });
  }
  // cms.js's session id: its own on this page, else the one it kept in the tab. A sandboxed
  // page (our landing pages) has no storage at all: reading it throws.
  function websiteSession() {
    if (global.cmsSessionId) return global.cmsSessionId;
    try {
      return global.sessionStorage.getItem("cms_session");
    } catch (e) {
      return null;
    }
  }
  global.cmsForms = { enhance: enhance };
  // <script src="/form.js" data-enhance>: the page's forms drawn by the service are enhanced at once.
  var own = document.currentScript;
  if (own && own.hasAttribute("data-enhance")) document.querySelectorAll("form.cms-form").forEach(enhance);
})(window);
