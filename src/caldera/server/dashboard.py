"""The web dashboard, served beside the API: its pages, its login, its static files.

  GET  /  /jobs  /jobs/{namespace}/{name}  /nodes  /timeline    a page (login first: 303 to /login)
  GET  /login      POST /login (form: token, next)      POST /logout (form: csrf)
  GET  /static/{version}/...                             CSS, ES modules, icon (cached for good:
                                                         the version is a hash of their contents)
  GET  /docs       the API's interactive documentation (Swagger UI from the swagger-ui-py
                   package, served from /docs/assets/: nothing from another origin)
A page is a small HTML shell naming its ES module, with the page's first data in it
(`firstview`); the module draws that, then follows changes through the watch API and reads
the API again (with the session's CSRF token, see `auth`) when something it shows changed.
Nothing comes from another origin (the Content-Security-Policy says so), nothing is built:
the files under `static/` are what the browser runs.

`Dashboard` is the outermost middleware of the API app: it answers the dashboard's paths itself
and hands every other request on, with the bearer token if it is the dashboard's own
(`auth.CookieToBearer`). Invariant: no page and no API answer reaches a browser without a valid
session (pages) or the token or a valid session with its CSRF token (API); a login page carries
no data.
"""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from caldera.server.assets import Assets, asset_version
from caldera.server.auth import (
    CookieToBearer,
    Sessions,
    cookie_header,
    form_fields,
    same_origin,
    session_of,
)
from caldera.server.errors import CatchAll, error_response
from caldera.server.firstview import data_block, first_view
from caldera.system.api import ClusterAPI
from caldera.utils.clock import Clock

STATIC = Path(__file__).with_name("static")
PAGES = {
    "/": ("overview", "Overview"),
    "/jobs": ("jobs", "Jobs"),
    "/nodes": ("nodes", "Nodes"),
    "/timeline": ("timeline", "Timeline"),
}
MAX_FORM_BYTES = 8 * 1024
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not no-referrer: with it a form POST says Origin: null
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
IMPORT = re.compile(r'^import\b[^;]*?\bfrom\s*"\./([\w.-]+\.js)"', re.MULTILINE)


def _swagger_files() -> Path:
    """Swagger UI's own files, as the swagger-ui-py package ships them (its Python code is not used)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the swagger-ui-py package is not installed (make installs it)")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


SWAGGER = _swagger_files()
# Swagger UI sets style attributes and draws with data: images; nothing else is relaxed.
DOCS_HEADERS = {
    **PAGE_HEADERS,
    "Content-Security-Policy": CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'").replace(
        "img-src 'self'", "img-src 'self' data:"
    ),
}


def module_imports(root: Path = STATIC / "js") -> dict[str, list[str]]:
    """Per ES module, every module it imports, directly or not: a page preloads them all with its own, so
    the browser fetches them at once instead of one import after another."""
    direct = {p.name: IMPORT.findall(p.read_text()) for p in sorted(root.glob("*.js"))}
    every: dict[str, list[str]] = {}
    for name, imports in direct.items():
        seen: list[str] = []
        todo = list(imports)
        while todo:
            m = todo.pop(0)
            if m not in seen and m != name:
                seen.append(m)
                todo.extend(direct.get(m, []))
        every[name] = seen
    return every


def is_dashboard_path(path: str) -> bool:
    return path in PAGES or path in ("/login", "/logout", "/docs") or path.startswith(("/jobs/", "/static/", "/docs/"))


class Dashboard:
    """ASGI middleware: the dashboard's paths answered here, every other request handed on (see the module)."""

    def __init__(self, app: ASGIApp, token: str, clock: Clock, cluster: ClusterAPI | None = None) -> None:
        self.sessions = Sessions(token, clock)
        self.clock = clock
        self.cluster = cluster  # the pages' first data comes from it (without it, each page asks the API)
        self.api = CookieToBearer(app, self.sessions, token)
        self.version = asset_version(STATIC)
        self.imports = module_imports()
        routes = Router(
            routes=[
                *(Route(path, self._page, methods=["GET", "HEAD"]) for path in PAGES),
                Route("/jobs/{namespace}/{name}", self._page, methods=["GET", "HEAD"]),
                Route("/login", self._login_page, methods=["GET", "HEAD"]),
                Route("/login", self._login, methods=["POST"]),
                Route("/logout", self._logout, methods=["POST"]),
                Route("/docs", self._docs, methods=["GET", "HEAD"]),
                Mount(f"/static/{self.version}", app=Assets(STATIC)),
                Mount("/docs/assets", app=StaticFiles(directory=SWAGGER)),
            ],
            default=_not_found,
        )
        self.pages = CatchAll(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_dashboard_path(scope["path"]):
            await self.pages(scope, receive, send)
        else:
            await self.api(scope, receive, send)

    # ------------------------------------------------------------ pages

    def _session(self, request: Request) -> str | Response:
        """The request's valid session, else the redirect to the login page that comes back here."""
        session = session_of(request.headers)
        if session is None or not self.sessions.valid(session):
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)
        return session

    async def _docs(self, request: Request) -> Response:
        session = self._session(request)
        if isinstance(session, Response):
            return session
        page = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="caldera-csrf" content="{html.escape(self.sessions.csrf(session))}">'
            "<title>API · caldera</title>"
            f'<link rel="icon" href="/static/{self.version}/icon.svg" type="image/svg+xml">'
            '<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>'
            '<body><div id="swagger-ui"></div><script src="/docs/assets/swagger-ui-bundle.js"></script>'
            f'<script type="module" src="/static/{self.version}/js/docs.js"></script></body></html>'
        )
        return HTMLResponse(page, headers=DOCS_HEADERS)

    async def _page(self, request: Request) -> Response:
        session = self._session(request)
        if isinstance(session, Response):
            return session
        path = request.url.path
        module, title = PAGES.get(path, ("job", "Job"))
        if module == "job":
            title = f"{request.path_params['name']} · {request.path_params['namespace']}"
        data = ""
        if self.cluster is not None and request.method == "GET":
            params, query = dict(request.path_params), dict(request.query_params)
            view = await run_in_threadpool(first_view, self.cluster, module, params, query, self.clock.now())
            data = data_block(view)
        return HTMLResponse(self._shell(module, title, self.sessions.csrf(session), data), headers=PAGE_HEADERS)

    def _shell(self, module: str, title: str, csrf: str, data: str = "") -> str:
        v = self.version
        nav = "".join(
            f'<a href="{path}"{" aria-current=page" if page == module or (page == "jobs" and module == "job") else ""}>'
            f"{name}</a>"
            for path, (page, name) in PAGES.items()
        )
        preload = "".join(
            f'<link rel="modulepreload" href="/static/{v}/js/{m}">' for m in self.imports.get(f"{module}.js", [])
        )
        return (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="caldera-csrf" content="{html.escape(csrf)}">'
            f"<title>{html.escape(title)} · caldera</title>"
            f'<link rel="icon" href="/static/{v}/icon.svg" type="image/svg+xml">'
            f'<link rel="stylesheet" href="/static/{v}/app.css">{preload}'
            f'<script type="module" src="/static/{v}/js/{module}.js"></script></head>'
            f'<body data-page="{module}"><header class="top"><a class="brand" href="/">caldera</a><nav>{nav}</nav>'
            '<span id="live" class="live" role="status">connecting…</span>'
            '<form method="post" action="/logout" class="logout">'
            f'<input type="hidden" name="csrf" value="{html.escape(csrf)}"><button type="submit">Log out</button></form>'
            f'</header><main id="main"><p class="loading">Loading…</p></main>{data}</body></html>'
        )

    # ------------------------------------------------------------ login

    async def _login_page(self, request: Request) -> Response:
        next_path = _local(request.query_params.get("next"))
        session = session_of(request.headers)
        if session is not None and self.sessions.valid(session):
            return RedirectResponse(next_path, status_code=303)
        return self._login_form(next_path, "", 200)

    async def _login(self, request: Request) -> Response:
        if not same_origin(request.headers, request.scope):
            return self._login_form("/", "This login came from another site: log in here.", 403)
        body = await _read_limited(request, MAX_FORM_BYTES)
        if body is None:
            return self._login_form("/", "The form is too large.", 413)
        fields = form_fields(body)
        next_path = _local(fields.get("next"))
        if not self.sessions.token_matches(fields.get("token", "")):
            return self._login_form(next_path, "Wrong token.", 401)
        response = RedirectResponse(next_path, status_code=303)
        secure = request.url.scheme == "https"
        response.headers.append("Set-Cookie", cookie_header(self.sessions.issue(), self.sessions.max_age, secure))
        return response

    async def _logout(self, request: Request) -> Response:
        body = await _read_limited(request, MAX_FORM_BYTES)
        session = session_of(request.headers)
        if body is None or session is None or not same_origin(request.headers, request.scope):
            return RedirectResponse("/login", status_code=303)
        if not self.sessions.csrf_matches(session, form_fields(body).get("csrf")):
            return Response("not from this dashboard", status_code=403, headers={"Cache-Control": "no-store"})
        response = RedirectResponse("/login", status_code=303)
        response.headers.append("Set-Cookie", cookie_header("", 0, request.url.scheme == "https"))
        return response

    def _login_form(self, next_path: str, error: str, status: int) -> Response:
        v = self.version
        message = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
        page = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>Log in · caldera</title>'
            f'<link rel="icon" href="/static/{v}/icon.svg" type="image/svg+xml">'
            f'<link rel="stylesheet" href="/static/{v}/app.css"></head>'
            '<body data-page="login"><main class="login"><h1>caldera</h1>'
            '<form method="post" action="/login">'
            f'<input type="hidden" name="next" value="{html.escape(next_path)}">'
            '<label for="token">API token</label>'
            '<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>'
            f'{message}<button type="submit">Log in</button></form>'
            "<p class=hint>The token is the file <code>token</code> in the daemon's home "
            "(<code>$CALDERA_HOME</code>, by default <code>~/.caldera</code>); "
            "<code>caldera dashboard</code> prints where.</p></main></body></html>"
        )
        return HTMLResponse(page, status_code=status, headers=PAGE_HEADERS)


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    await error_response(404, "NotFound", f"no such page: {scope['path']}")(scope, receive, send)


def _local(path: str | None) -> str:
    """A page of this server to go to after login: a local path, else the overview (no open redirect)."""
    if not path or not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return path


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The request body, or None if it is longer than `limit` bytes."""
    declared = Headers(scope=request.scope).get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return body
