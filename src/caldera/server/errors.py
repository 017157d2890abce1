"""What the REST API answers when something is wrong: one JSON line, never a traceback.

Every error body is {"error": one line, "reason": ...}; a ValidationError adds
"errors" [{"path", "rule"}] and "source" so the client rebuilds it exactly.
  401 Unauthorized  no token or a wrong one (checked before anything else, in constant time)
  404 NotFound      no such job, queue, pod, or route
  409 Conflict      not allowed in the object's current state
  410 Expired       a watch from a resourceVersion older than the change log keeps
  422 Invalid       a manifest or parameter that breaks a rule
  413 TooLarge      a request body over the limit (`limits`), refused before it is read further
  503 Unavailable   the daemon cannot save its state (disk full, read-only): the change is not durable
  400 BadRequest    any other CalderaError
  500 InternalError anything else: logged with its traceback, one line to the client
A CalderaError is matched by class name along its MRO, so the store's own `Conflict`
maps like `caldera.system.api.Conflict`.
"""

from __future__ import annotations

import hmac
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from caldera.core.errors import CalderaError, ValidationError

log = logging.getLogger("caldera.server")

UNAUTHORISED = "not authorised: wrong or missing token"
_BY_NAME = {
    "NotFound": (404, "NotFound"),
    "Conflict": (409, "Conflict"),
    "Expired": (410, "Expired"),
    "Unavailable": (503, "Unavailable"),
}


class FieldProblem(BaseModel):
    path: str
    rule: str


class ErrorBody(BaseModel):
    """Every error's body, as the OpenAPI schema describes it (`ERROR_RESPONSES`)."""

    error: str
    reason: str
    errors: list[FieldProblem] | None = None  # 422 of a manifest: each field path and the rule it breaks
    source: str | None = None


# The answers any operation may give besides its own (the schema says so, so a client can rely on it).
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    status: {  # JSON even where the operation answers text (a pod's log)
        "model": ErrorBody,
        "description": what,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for status, what in (
        (400, "a request that is wrong in another way"),
        (401, "no token or a wrong one"),
        (404, "no such object or route"),
        (405, "a method the path does not take"),
        (409, "not allowed in the object's current state"),
        (410, "a watch from a version older than the change log keeps"),
        (413, "a body over the limit"),
        (422, "a manifest or parameter that breaks a rule"),
        (503, "the daemon cannot save its state (disk full, read-only): the change is not durable"),
    )
}


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
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = Headers(scope=scope).get("authorization", "").encode("latin-1", "replace")
            # compare_digest takes the same time wherever the first difference is.
            if not hmac.compare_digest(given, self._expected):
                response = error_response(401, "Unauthorized", UNAUTHORISED)
                response.headers["WWW-Authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


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
