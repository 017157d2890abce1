"""How pods of one job reach each other: the seam between executors and framework plugins.

An executor knows where its pods live; the framework plugins only need two answers:
the host other pods dial to reach pod `pod`, and the host port on which that pod's own
container port `port` is reachable. On Kubernetes (Volcano's svc plugin) a pod is
`<pod>.<job>` behind a headless Service and keeps its container ports; on the embedded
cluster every pod is 127.0.0.1 and each (pod, container port) gets its own free host
port, which is what keeps two jobs on one machine from colliding.

Invariant: answers are pure functions of their arguments, so rendering a pod twice
gives the same environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from caldera.core.errors import CalderaError


class Addresses(Protocol):
    def host(self, pod: str) -> str:
        """The address other pods use to reach pod `pod` (a DNS name or an IPv4 address)."""
        ...

    def port(self, pod: str, port: int) -> int:
        """The port on `host(pod)` where pod `pod`'s own container port `port` is reachable."""
        ...


class UnmappedPortError(CalderaError, LookupError):
    """A (pod, container port) the executor did not allocate a host port for."""


@dataclass(frozen=True, slots=True)
class DnsAddresses:
    """Kubernetes and Volcano: host `<pod>.<job>` (headless Service `<job>`), ports unchanged."""

    job: str

    def host(self, pod: str) -> str:
        return f"{pod}.{self.job}"

    def port(self, pod: str, port: int) -> int:
        return port


class MappedAddresses:
    """The embedded cluster: one host for every pod and an explicit (pod, container port) → host port map.

    A field named `host` would shadow the method, hence a plain class with slots."""

    __slots__ = ("_host", "_ports")

    def __init__(self, host: str, ports: Mapping[tuple[str, int], int]) -> None:
        self._host = host
        self._ports = dict(ports)

    def host(self, pod: str) -> str:
        return self._host

    def port(self, pod: str, port: int) -> int:
        mapped = self._ports.get((pod, port))
        if mapped is None:
            # Rendering asked for a port the executor did not allocate: a bug in the caller,
            # so say exactly which pair was missing rather than raising a bare KeyError.
            raise UnmappedPortError(f"no host port is mapped for container port {port} of pod {pod}")
        return mapped

    def __repr__(self) -> str:
        return f"MappedAddresses(host={self._host!r}, ports={self._ports!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MappedAddresses):
            return NotImplemented
        return self._host == other._host and self._ports == other._ports

    def __hash__(self) -> int:
        return hash((self._host, frozenset(self._ports.items())))
