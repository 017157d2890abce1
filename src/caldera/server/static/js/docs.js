// The API's interactive documentation (Swagger UI, served by the daemon itself): every request it
// makes, the description included, carries the session's CSRF token, as the dashboard's own do.

const csrf = document.querySelector('meta[name="caldera-csrf"]')?.content ?? "";

window.SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  requestInterceptor: (request) => {
    request.headers["X-Caldera-CSRF"] = csrf;
    return request;
  },
});
