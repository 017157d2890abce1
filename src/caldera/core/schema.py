"""Typed reads of untrusted manifest data that record a FieldError instead of raising.

A manifest is read in one pass and every problem is recorded against its field path
in the manifest's own spelling (`spec.tasks[1].replicas`), so that a user sees all of
them at once. A read that fails returns a harmless default so the pass can go on;
the caller raises one ValidationError at the end if anything was recorded.

`None` (YAML `key:` or `key: null`) counts as absent, as it does in Kubernetes.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping

from caldera.core.errors import FieldError, ValidationError
from caldera.core.objects import ObjectMeta
from caldera.core.quantity import QuantityError
from caldera.core.resources import to_units

Doc = Mapping[str, object]

TOP_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")


def child(path: str, key: str) -> str:
    """The path of field `key` under `path`."""
    return f"{path}.{key}" if path else key


def item(path: str, index: int) -> str:
    return f"{path}[{index}]"


def describe(value: object) -> str:
    """What a YAML value is, for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def raise_if_any(errors: list[FieldError], source: str) -> None:
    if errors:
        raise ValidationError(list(errors), source)


class FieldReader:
    """Collects the errors of one read; every method records its problem and goes on."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def error(self, path: str, rule: str) -> None:
        self.errors.append(FieldError(path, rule))

    def raise_if_errors(self, source: str) -> None:
        raise_if_any(self.errors, source)

    # ------------------------------------------------------------ objects

    def top(self, doc: object, source: str, *, api: str, kind: str, fields: Collection[str] = TOP_FIELDS) -> Doc:
        """A document's top level, whose apiVersion and kind, if given, must be `api` and `kind`.

        Raises at once when there is no mapping to read: nothing below could be checked."""
        if not isinstance(doc, Mapping):
            raise ValidationError([FieldError("", f"a {kind} manifest must be a mapping, not {describe(doc)}")], source)
        top = self.mapping(doc, "")
        self.raise_if_errors(source)
        assert top is not None  # a mapping with string keys, checked just above
        self.known(top, "", fields)
        for key, want in (("apiVersion", api), ("kind", kind)):
            got = top.get(key)
            if got is not None and got != want:
                self.error(key, f"must be {want} for a {kind}, not {got!r}")
        return top

    def metadata(self, top: Doc, *, namespaced: bool) -> ObjectMeta:
        meta = self.sub(top, "metadata", "")
        if meta is None:
            if top.get("metadata") is None:
                self.error("metadata.name", "is required")
            return ObjectMeta(name="")
        self.required(meta, "name", "metadata")
        # Other metadata (uid, resourceVersion, generateName, ...) is the store's business, not the manifest's.
        return ObjectMeta(
            name=self.string(meta, "name", "metadata"),
            namespace=self.string(meta, "namespace", "metadata", "default") if namespaced else "default",
            labels=self.string_map(meta, "labels", "metadata"),
            annotations=self.string_map(meta, "annotations", "metadata"),
        )

    def refuse_unsupported(self, doc: Doc, path: str, fields: Mapping[str, tuple[object, ...]]) -> None:
        """Refuse a field caldera does not implement unless it holds a value that means "off"."""
        for key, harmless in fields.items():
            value = doc.get(key)
            if value is None or value in harmless or value in ([], {}):
                continue
            self.error(child(path, key), "is not supported by caldera yet")

    # ------------------------------------------------------------ shapes

    def mapping(self, value: object, path: str) -> Doc | None:
        """`value` as a mapping with string keys; None when absent or wrong."""
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.error(path, f"must be a mapping, not {describe(value)}")
            return None
        for key in value:
            if not isinstance(key, str):
                # YAML 1.1 reads unquoted `on`, `yes`, `1` as non-strings.
                self.error(path, f"key {key!r} must be a string (quote it)")
                return None
        return value

    def sub(self, doc: Doc, key: str, path: str) -> Doc | None:
        return self.mapping(doc.get(key), child(path, key))

    def items(self, doc: Doc, key: str, path: str) -> list[tuple[str, object]]:
        """The elements of list `key`, each with its own path."""
        value = doc.get(key)
        here = child(path, key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(here, f"must be a list, not {describe(value)}")
            return []
        return [(item(here, i), v) for i, v in enumerate(value)]

    def known(self, doc: Doc, path: str, fields: Collection[str]) -> None:
        """Reject fields outside `fields`: at the levels caldera models fully, an unknown field is a typo."""
        for key in doc:
            if key not in fields:
                close = difflib.get_close_matches(key, sorted(fields), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                self.error(child(path, key), f"unknown field{hint}")

    def required(self, doc: Doc, key: str, path: str) -> bool:
        if doc.get(key) is None:
            self.error(child(path, key), "is required")
            return False
        return True

    # ------------------------------------------------------------ scalars

    def string(self, doc: Doc, key: str, path: str, default: str = "") -> str:
        value = doc.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.error(child(path, key), f"must be a string, not {describe(value)}")
            return default
        return value

    def choice(self, doc: Doc, key: str, path: str, allowed: Collection[str], default: str) -> str:
        value = self.string(doc, key, path, default)
        if value not in allowed:
            names = ", ".join(a or '""' for a in allowed)
            self.error(child(path, key), f"{value!r} is not one of {names}")
            return default
        return value

    def integer(self, doc: Doc, key: str, path: str) -> int | None:
        value = doc.get(key)
        if value is None:
            return None
        # bool is an int in Python but not in a Kubernetes schema.
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(child(path, key), f"must be an integer, not {describe(value)}")
            return None
        return value

    def boolean(self, doc: Doc, key: str, path: str, default: bool) -> bool:
        value = doc.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(child(path, key), f"must be true or false, not {describe(value)}")
            return default
        return value

    # ------------------------------------------------------------ collections

    def strings(self, doc: Doc, key: str, path: str) -> tuple[str, ...]:
        out: list[str] = []
        for here, value in self.items(doc, key, path):
            if isinstance(value, str):
                out.append(value)
            else:
                self.error(here, f"must be a string, not {describe(value)} (quote it)")
        return tuple(out)

    def string_map(self, doc: Doc, key: str, path: str) -> dict[str, str]:
        """A map of strings, such as labels: Kubernetes refuses unquoted numbers and booleans here."""
        here = child(path, key)
        raw = self.mapping(doc.get(key), here)
        if raw is None:
            return {}
        out: dict[str, str] = {}
        for k, v in raw.items():
            if isinstance(v, str):
                out[k] = v
            else:
                self.error(child(here, k), f"must be a string, not {describe(v)} (quote it)")
        return out

    def resources(self, doc: Doc, key: str, path: str) -> dict[str, float]:
        """A ResourceList (`{cpu: 500m, memory: 1Gi}`) in scheduler units; each bad quantity is its own error."""
        here = child(path, key)
        raw = self.mapping(doc.get(key), here)
        if raw is None:
            return {}
        out: dict[str, float] = {}
        for name, quantity in raw.items():
            try:
                value = to_units(name, quantity)
            except QuantityError as e:
                self.error(child(here, name), str(e))
                continue
            if value < 0:
                self.error(child(here, name), f"{quantity!r} must not be negative")
                continue
            out[name] = value
        return out
