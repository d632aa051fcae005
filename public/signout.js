// The sign-out page: the csrf token the sign-out post needs, and where to go after.
const params = new URLSearchParams(location.search);
document.getElementById("callbackUrl").value = params.get("callbackUrl") || "/auth/signin";
fetch("/api/auth/csrf", { credentials: "same-origin" })
  .then((r) => r.json())
  .then((d) => {
    document.getElementById("csrfToken").value = d.csrfToken;
    document.getElementById("submit").disabled = false;
  });
