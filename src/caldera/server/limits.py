"""Request limits: a body over MAX_BODY bytes is refused with 413 before it is read any further.

A request that says its length (Content-Length) over the limit is answered at once, its body
never read; one that does not (chunked) is read until it passes the limit, then answered 413
and its connection closed. So a client cannot make the daemon hold or parse a body of any size.
(Other limits live where their rule is checked: a job's pods in `system.admission`.)
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from caldera.server.errors import error_response

MAX_BODY = 4 << 20  # bytes: a manifest is kilobytes; a thousand-task job still far below


def _refusal(size: str) -> str:
    return f"request body {size} is over the limit of {MAX_BODY} bytes ({MAX_BODY >> 20} MiB)"


class BodyLimit:
    """ASGI middleware refusing bodies over `limit` bytes with 413 TooLarge."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send, f"of {declared} bytes")
            return
        seen = 0
        over = False

        async def counting_receive() -> Message:
            # Past the limit, the app is told the body ended (no more is read) and its answer is replaced.
            nonlocal seen, over
            if over:
                return {"type": "http.request", "body": b"", "more_body": False}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    over = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        replaced = False

        async def checked_send(message: Message) -> None:
            nonlocal replaced
            if not over:
                await send(message)
            elif not replaced:
                replaced = True
                await self._refuse(scope, receive, send, f"of more than {self.limit} bytes")

        await self.app(scope, counting_receive, checked_send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, size: str) -> None:
        response = error_response(413, "TooLarge", _refusal(size))
        response.headers["Connection"] = "close"  # the rest of the body is not read
        await response(scope, receive, send)
