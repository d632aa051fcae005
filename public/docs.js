// Swagger UI over the live OpenAPI document. Try-it-out requests are same-origin,
// so the browser sends the session cookie by itself; an API key goes in through Authorize.
window.ui = SwaggerUIBundle({
  url: "/api/openapi",
  dom_id: "#swagger-ui",
  deepLinking: true,
  persistAuthorization: true,
  tryItOutEnabled: true,
  displayRequestDuration: true,
  filter: true,
  docExpansion: "none",
  presets: [SwaggerUIBundle.presets.apis],
  requestInterceptor: (request) => {
    request.credentials = "same-origin";
    return request;
  },
});

fetch("/api/auth/session", { credentials: "same-origin" })
  .then((res) => res.json())
  .then((session) => {
    if (!session.user) return;
    const who = document.getElementById("who");
    who.textContent = `Signed in as ${session.user.email}: try-it-out requests carry your session. `;
    const link = document.createElement("a");
    link.href = "/";
    link.textContent = "Home";
    who.append(link);
  });
