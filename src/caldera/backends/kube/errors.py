"""The errors of the Kubernetes client: every failure is a `KubeError`; the API server's refusals carry its Status.

`raise_status` turns a Status object (a reply's body, or a watch's ERROR event) into the matching
error: `NotFound` (404), `Conflict` (409), `Gone` (410, or reason Expired/Gone), else `ApiError`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from caldera.core.errors import CalderaError

JSON = dict[str, Any]


class KubeError(CalderaError):
    """Any failure talking to the API server."""


class Unreachable(KubeError):
    """The API server could not be reached, did not answer in time, or cut the stream."""


class ApiError(KubeError):
    """The API server refused a request: its Status `code`, `reason`, `message` and `details`."""

    def __init__(self, code: int, reason: str, message: str, details: JSON | None = None) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}
        super().__init__(f"{code} {reason}: {message}")


class NotFound(ApiError):
    """404: no such object (or resource)."""


class Conflict(ApiError):
    """409: the object changed since the resourceVersion sent, or it already exists (reason AlreadyExists)."""


class Gone(ApiError):
    """410: the resourceVersion (or continue token) is older than the server keeps; list again."""


def raise_status(status: JSON, default_code: int) -> NoReturn:
    """The ApiError a Status object stands for (`code`, `reason`, `message`, `details`)."""
    code = status.get("code")
    code = code if isinstance(code, int) else default_code
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    details = status.get("details")
    details = details if isinstance(details, dict) else None
    error: type[ApiError] = {404: NotFound, 409: Conflict, 410: Gone}.get(code, ApiError)
    if reason in ("Expired", "Gone"):
        error = Gone
    raise error(code, reason or "Unknown", message, details)
