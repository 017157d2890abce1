"""The dashboard's own static files (CSS, ES modules, icon), read once and answered from memory.

They are few (about 80 KB) and never change while the server runs, so each is read at start-up
with its headers ready: a request is a dictionary lookup, on the event loop, with no thread, no
`stat` and no file opened per request. A page's first visit asks for all of its modules at once,
and the server answers them as fast as it can write.

`version` is a hash of every file's path and contents: the files are served under
`/static/{version}/` and cached by the browser for good, since a change of any file changes the
path. A missing file, or any method but GET and HEAD, is a plain 404 or 405 in the API's error shape.
"""

from __future__ import annotations

import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from starlette.types import Receive, Scope, Send

from caldera.server.errors import error_response

CACHED = [(b"cache-control", b"public, max-age=31536000, immutable"), (b"x-content-type-options", b"nosniff")]
TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    headers: list[tuple[bytes, bytes]]


def asset_version(root: Path) -> str:
    """A hash of every file's path and contents under `root`: it changes whenever one does."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


class Assets:
    """ASGI app for a mount: the files under `root` by their path below the mount, from memory."""

    def __init__(self, root: Path) -> None:
        self.files: dict[str, Asset] = {}
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            body = path.read_bytes()
            kind = TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            if kind.startswith("text/"):
                kind += "; charset=utf-8"
            headers = [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode()), *CACHED]
            self.files["/" + path.relative_to(root).as_posix()] = Asset(body, headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        asset = self.files.get(path)
        if scope["method"] not in ("GET", "HEAD"):
            await error_response(405, "MethodNotAllowed", f"{scope['method']} is not allowed here")(
                scope, receive, send
            )
        elif asset is None:
            await error_response(404, "NotFound", f"no such file: {scope['path']}")(scope, receive, send)
        else:
            await send({"type": "http.response.start", "status": 200, "headers": asset.headers})
            body = asset.body if scope["method"] == "GET" else b""
            await send({"type": "http.response.body", "body": body})
