"""What the REST API answers when something is wrong: one JSON line, never a traceback.

Every error body is {"error": one line, "reason": ...}; a ValidationError adds
"errors" [{"path", "rule"}] and "source" so the client rebuilds it exactly.
  401 Unauthorized  no token or a wrong one (checked before anything else, in constant time;
                    a browser's is the cookie /docs?token=... gives it, see BearerAuth)
  404 NotFound      no such job, queue, pod, or route
  409 Conflict      not allowed in the object's current state
  410 Expired       a watch from a resourceVersion older than the change log keeps
  422 Invalid       a manifest or parameter that breaks a rule
  400 BadRequest    any other CalderaError
  500 InternalError anything else: logged with its traceback, one line to the client
A CalderaError is matched by class name along its MRO, so the store's own `Conflict`
maps like `caldera.system.api.Conflict`.
"""

from __future__ import annotations

import hmac
import logging
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from caldera.core.errors import CalderaError, ValidationError

log = logging.getLogger("caldera.server")

UNAUTHORISED = "not authorised: wrong or missing token"
_BY_NAME = {"NotFound": (404, "NotFound"), "Conflict": (409, "Conflict"), "Expired": (410, "Expired")}


def error_response(status: int, reason: str, message: str, **extra: object) -> JSONResponse:
    return JSONResponse({"error": _one_line(message), "reason": reason, **extra}, status_code=status)


def caldera_error_response(e: CalderaError) -> JSONResponse:
    for cls in type(e).__mro__:
        if cls.__name__ in _BY_NAME:
            status, reason = _BY_NAME[cls.__name__]
            break
    else:
        status, reason = 400, "BadRequest"
    if isinstance(e, ValidationError):
        errors = [{"path": f.path, "rule": f.rule} for f in e.errors]
        return error_response(422, "Invalid", str(e), errors=errors, source=e.source)
    return error_response(status, reason, str(e))


def install_error_handlers(app: FastAPI) -> None:
    """CalderaErrors, FastAPI's own parameter errors and HTTP errors (404 route, 405) as one JSON line."""

    async def caldera(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, CalderaError)
        return caldera_error_response(e)

    async def invalid(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, RequestValidationError)
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid request"))
        return error_response(422, "Invalid", message)

    async def http(request: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, HTTPException)
        if e.status_code == 404:
            message = f"no such resource: {request.method} {request.url.path}"
        else:
            message = str(e.detail)
        reason = {404: "NotFound", 405: "MethodNotAllowed"}.get(e.status_code, "BadRequest")
        return error_response(e.status_code, reason, message)

    app.add_exception_handler(CalderaError, caldera)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http)


class BearerAuth:
    """ASGI middleware: every HTTP request must carry the token.

    Programs send `Authorization: Bearer <token>`. A browser cannot, so the interactive
    documentation (`/docs?token=<token>`) answers with the token as a cookie (`COOKIE`,
    HttpOnly, SameSite=Strict: no other site's page can send it), which then stands for the
    header on every request of that browser."""

    def __init__(self, app: ASGIApp, token: str, *, docs_path: str = "/docs") -> None:
        self.app = app
        self._token = token.encode()
        self._expected = f"Bearer {token}".encode()
        self._docs = docs_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        given = headers.get("authorization", "").encode("latin-1", "replace")
        cookie = _cookie(headers.get("cookie", ""), COOKIE).encode("latin-1", "replace")
        # compare_digest takes the same time wherever the first difference is.
        if hmac.compare_digest(given, self._expected) or (cookie and hmac.compare_digest(cookie, self._token)):
            await self.app(scope, receive, send)
            return
        asked = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0].encode("latin-1")
        if scope["path"] == self._docs and asked and hmac.compare_digest(asked, self._token):
            await self.app(scope, receive, _with_cookie(send, self._token.decode()))
            return
        response = error_response(401, "Unauthorized", UNAUTHORISED)
        response.headers["WWW-Authenticate"] = "Bearer"
        await response(scope, receive, send)


COOKIE = "caldera_token"


def _cookie(header: str, name: str) -> str:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return ""
    morsel = jar.get(name)
    return morsel.value if morsel is not None else ""


def _with_cookie(send: Send, token: str) -> Send:
    """`send`, adding the token cookie to the response's headers."""
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict".encode()

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
        await send(message)

    return sending


class CatchAll:
    """ASGI middleware: an unexpected exception is logged and answered 500 with one line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as e:
            log.exception("%s %s failed", scope.get("method"), scope.get("path"))
            if started:
                return  # the body is under way: the client sees a cut stream, the log has the cause
            await error_response(500, "InternalError", f"internal error: {type(e).__name__}: {e}")(scope, receive, send)


def _one_line(message: str) -> str:
    line = " ".join(message.split())
    return line[:2000]
