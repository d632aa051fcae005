// The sign-up page (/auth/signup): registers through POST /api/auth/register (its limits apply),
// then signs in with the same credentials and goes where the sign-in page would.
(function () {
  const form = document.getElementById("signup");
  const error = document.getElementById("error");
  const value = (id) => document.getElementById(id).value;
  const callbackUrl = new URLSearchParams(location.search).get("callbackUrl") || "/";
  document.getElementById("signin").href = `/auth/signin?${new URLSearchParams({ callbackUrl })}`;

  const postJson = (url, body) =>
    fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });

  /** The register answer's error in a sentence: the field messages when there are some. */
  async function refusal(res) {
    if (res.status === 429) {
      const minutes = Math.ceil(Number(res.headers.get("Retry-After") || 3600) / 60);
      return `Too many accounts were created from your network. Try again in ${minutes} minutes.`;
    }
    const body = await res.json().catch(() => ({}));
    const fields = (body.details || []).map((d) => `${d.field}: ${d.message}`);
    return fields.length ? fields.join("; ") : body.error || "The account could not be created.";
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const email = value("email");
    const password = value("password");
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const registered = await postJson("/api/auth/register", { name: value("name"), email, password });
      if (registered.status !== 201) {
        error.textContent = await refusal(registered);
        return;
      }
      const signedIn = await postJson("/api/auth/callback/credentials", {
        email,
        password,
        callbackUrl,
        json: "true",
      });
      const target = signedIn.ok
        ? (await signedIn.json()).url
        : `/auth/signin?${new URLSearchParams({ callbackUrl })}`;
      location.assign(target);
    } catch {
      error.textContent = "The service could not be reached. Try again.";
    } finally {
      button.disabled = false;
    }
  });
})();
