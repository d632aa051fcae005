// The home page: who is signed in, and the sign-out form with its csrf token.
fetch("/api/auth/session", { credentials: "same-origin" })
  .then((res) => res.json())
  .then((session) => {
    if (!session.user) return;
    document.getElementById("who").textContent = `Signed in as ${session.user.email}.`;
    document.getElementById("signout").hidden = false;
    return fetch("/api/auth/csrf", { credentials: "same-origin" })
      .then((res) => res.json())
      .then((data) => {
        document.getElementById("csrfToken").value = data.csrfToken;
      });
  });
