"""The dashboard's login: a session cookie in place of the bearer token, for the dashboard's own requests.

A person logs in once with the API token (`POST /login`, in the body, never in a URL); the
answer sets `caldera_session`, HttpOnly (no script reads it) and SameSite=Strict (no other
site's page sends it). Its value is `<issued>.<nonce>.<mac>`: an HMAC under a key derived
from the token, so it is not the token, survives daemon restarts, expires after MAX_AGE and
dies with the token (a new token file, a new key).

The API accepts the cookie only for the dashboard's own requests: besides a valid cookie
a request must carry `X-Caldera-CSRF` with the value bound to that session (which only a
page served to the logged-in browser knows: it is in the page) and, when the browser says
where the request comes from (Origin, Sec-Fetch-Site), come from this server's own origin.
Such a request is then handed on as if it carried the bearer token, so the API's own check
(`errors.BearerAuth`) stays the one gate; anything else is handed on unchanged and is
refused there unless it has the token itself. A bearer token always works as before.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from caldera.utils.clock import Clock

COOKIE = "caldera_session"
CSRF_HEADER = "x-caldera-csrf"
MAX_AGE = 7 * 24 * 3600  # seconds a login lasts


class Sessions:
    """Issues and checks session values, and the CSRF token bound to each."""

    def __init__(self, token: str, clock: Clock, max_age: int = MAX_AGE) -> None:
        self._key = hmac.new(token.encode(), b"caldera dashboard sessions", hashlib.sha256).digest()
        self._token = token.encode()
        self._clock = clock
        self.max_age = max_age

    def token_matches(self, given: str) -> bool:
        """Whether `given` is the API token (in constant time, as the API compares it)."""
        return hmac.compare_digest(given.strip().encode("utf-8", "replace"), self._token)

    def issue(self) -> str:
        body = f"{int(self._clock.now())}.{secrets.token_urlsafe(16)}"
        return f"{body}.{self._mac('session', body)}"

    def valid(self, value: str | None) -> bool:
        if not value or value.count(".") != 2:
            return False
        body, _, mac = value.rpartition(".")
        if not hmac.compare_digest(mac.encode(), self._mac("session", body).encode()):
            return False
        issued = body.partition(".")[0]
        return issued.isdigit() and 0 <= self._clock.now() - int(issued) < self.max_age

    def csrf(self, session: str) -> str:
        """The CSRF token of a session: what its pages send in X-Caldera-CSRF."""
        return self._mac("csrf", session)

    def csrf_matches(self, session: str, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given).encode(), self.csrf(session).encode())

    def _mac(self, purpose: str, text: str) -> str:
        return hmac.new(self._key, f"{purpose}:{text}".encode(), hashlib.sha256).hexdigest()


def session_of(headers: Headers) -> str | None:
    """The session cookie's value, if the request has one."""
    raw = headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed Cookie header is no session, not an error
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def same_origin(headers: Headers, scope: Scope) -> bool:
    """False when the browser says the request comes from another origin (Origin or Sec-Fetch-Site)."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    scheme = "https" if scope.get("scheme") == "https" else "http"
    host = headers.get("host", "")
    return bool(host) and origin == f"{scheme}://{host}"


def cookie_header(value: str, max_age: int, secure: bool) -> str:
    attributes = f"{COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict"
    return attributes + ("; Secure" if secure else "")


class CookieToBearer:
    """ASGI middleware: a request of the dashboard's (valid cookie, CSRF header, same origin) gets the bearer token."""

    def __init__(self, app: ASGIApp, sessions: Sessions, token: str) -> None:
        self.app = app
        self._sessions = sessions
        self._authorization = f"Bearer {token}".encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            if "authorization" not in headers and self.from_dashboard(headers, scope):
                scope = {**scope, "headers": [*scope["headers"], (b"authorization", self._authorization)]}
        await self.app(scope, receive, send)

    def from_dashboard(self, headers: Headers, scope: Scope) -> bool:
        session = session_of(headers)
        return (
            session is not None
            and self._sessions.valid(session)
            and self._sessions.csrf_matches(session, headers.get(CSRF_HEADER))
            and same_origin(headers, scope)
        )


def form_fields(body: bytes) -> Mapping[str, str]:
    """The fields of an application/x-www-form-urlencoded body (the last value of each)."""
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
