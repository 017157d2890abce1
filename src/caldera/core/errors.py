"""Errors that reach users: each names where the problem is and which rule it breaks."""

from __future__ import annotations

from dataclasses import dataclass


class CalderaError(Exception):
    """Base of all errors caldera reports to a user (one line, no traceback)."""


@dataclass(frozen=True, slots=True)
class FieldError:
    """One broken rule: `path` is a field path such as `spec.tasks[1].replicas`."""

    path: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}" if self.path else self.rule


class ValidationError(CalderaError):
    """Input that breaks one or more rules. `source` is the file (or object) it came from."""

    def __init__(self, errors: list[FieldError], source: str = "") -> None:
        self.errors = errors
        self.source = source
        super().__init__(self.one_line())

    def one_line(self) -> str:
        head = f"{self.source}: " if self.source else ""
        first = str(self.errors[0]) if self.errors else "invalid"
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        return f"{head}{first}{more}"

    def with_source(self, source: str, prefix: str = "") -> ValidationError:
        """The same errors, attributed to `source`, with paths under `prefix`."""
        errors = [FieldError(_join(prefix, e.path), e.rule) for e in self.errors]
        return ValidationError(errors, source)


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"
