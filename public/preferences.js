// The preference centre's form: sends the channels the person changed (an untouched
// unknown channel stays unknown, not opted out) and every topic with PUT /api/preferences.
(function () {
  var form = document.getElementById("preferences");
  var status = document.getElementById("status");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var channels = {};
    var topics = {};
    form.querySelectorAll("input[name=channel]").forEach(function (box) {
      if (box.checked !== box.defaultChecked) channels[box.value] = box.checked ? "opted_in" : "opted_out";
    });
    form.querySelectorAll("input[name=topic]").forEach(function (box) {
      topics[box.value] = box.checked;
    });
    status.textContent = "Saving…";
    fetch("/api/preferences?token=" + encodeURIComponent(form.dataset.token), {
      method: "PUT",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ channels: channels, topics: topics }),
    }).then(
      function (res) {
        if (res.ok)
          form.querySelectorAll("input").forEach(function (box) {
            box.defaultChecked = box.checked;
          });
        status.textContent = res.ok ? "Saved." : "Could not save; please try again.";
      },
      function () {
        status.textContent = "Could not save; please try again.";
      },
    );
  });
})();
