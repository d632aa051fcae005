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
    // The website script's session: the submission makes its anonymous page views the contact's.
    var session = global.sessionStorage.getItem("cms_session");
    if (session) {
      var sessionField = document.createElement("input");
      sessionField.type = "hidden";
      sessionField.name = "sessionId";
      sessionField.value = session;
      form.appendChild(sessionField);
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var button = form.querySelector("button[type=submit]");
      form.querySelectorAll("[data-error-for]").forEach(function (p) {
        p.textContent = "";
      });
      var general = form.querySelector("[data-error-for=_form]");
      button.disabled = true;
      fetch(form.action, {
        method: "POST",
        headers: { Accept: "application/json" },
        body: new URLSearchParams(new FormData(form)),
      })
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
  global.cmsForms = { enhance: enhance };
})(window);
