// The sign-in page: its error from the URL, the csrf token, and the password-reset request.
const params = new URLSearchParams(location.search);
const messages = {
  CredentialsSignin: "Wrong email or password.",
  SessionRequired: "Please sign in to continue.",
};
const error = params.get("error") || (params.get("csrf") ? "Your form expired, please try again." : "");
document.getElementById("error").textContent = messages[error] || error;
document.getElementById("callbackUrl").value = params.get("callbackUrl") || "/";
fetch("/api/auth/csrf", { credentials: "same-origin" })
  .then((r) => r.json())
  .then((d) => {
    document.getElementById("csrfToken").value = d.csrfToken;
  });
document.getElementById("forgot").addEventListener("click", async (e) => {
  e.preventDefault();
  const email = document.getElementById("email").value;
  if (!email) {
    document.getElementById("error").textContent = "Enter your email first.";
    return;
  }
  await fetch("/api/auth/forgot-password", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email }),
  });
  document.getElementById("error").textContent = "If the address is registered, a reset link is on its way.";
});
