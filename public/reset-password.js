// The password-reset page: the new password sent with the link's token.
const token = new URLSearchParams(location.search).get("token") || "";
document.getElementById("reset").addEventListener("submit", async (e) => {
  e.preventDefault();
  const res = await fetch("/api/auth/reset-password", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token, password: document.getElementById("password").value }),
  });
  const body = await res.json();
  document.getElementById("message").textContent = res.ok ? "Done. You can now sign in." : body.error;
  if (res.ok)
    setTimeout(() => {
      location.href = "/auth/signin";
    }, 1500);
});
