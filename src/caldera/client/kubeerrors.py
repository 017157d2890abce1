"""Kubernetes' errors as the daemon's, so a CLI verb reads the same refusal on both: `NotFound`, `Conflict`,
`ValidationError` with the API server's field paths, or a `CalderaError` with its message.

A 404 that names no object means the cluster does not serve the resource at all (caldera's API is not
installed): said so, with how to install it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from caldera.backends.kube.client import ApiError, Unreachable
from caldera.backends.kube.client import Conflict as KubeConflict
from caldera.backends.kube.client import NotFound as KubeNotFound
from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.system.api import Conflict, NotFound

INSTALL = "install it with `caldera kube manifests | kubectl apply --server-side -f -`"


@contextmanager
def errors(what: str) -> Iterator[None]:
    """Kubernetes' errors as the daemon's: NotFound, Conflict, ValidationError with field paths, CalderaError."""
    try:
        yield
    except KubeNotFound as e:
        if not e.details.get("name"):
            raise CalderaError(f"the cluster does not serve {what}: is caldera's API installed? ({INSTALL})") from None
        raise NotFound(f"{what} not found") from None
    except KubeConflict as e:
        raise Conflict(f"{what}: {e.message}") from None
    except ApiError as e:
        if e.code == 422 or e.reason == "Invalid":
            causes = [c for c in e.details.get("causes") or [] if isinstance(c, dict)]
            errors = [FieldError(str(c.get("field") or ""), str(c.get("message") or "")) for c in causes]
            raise ValidationError(errors or [FieldError("", e.message)], what) from None
        raise CalderaError(f"{what}: the API server refused: {e.message}") from None
    except Unreachable as e:
        raise CalderaError(f"cannot reach the Kubernetes API server: {e}") from None
