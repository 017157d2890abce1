"""Fresh ports for a round's endpoints: bound to port 0 on this node's host, closed, published.

Never cached across rounds (reference/elastic-etcd.md pitfalls 6 and 8). All ports of one call
are held open together, so they are distinct. A port can still be taken between close and the
worker's bind; the worker then fails, and the next round picks new ports.
"""

from __future__ import annotations

import contextlib
import socket


def free_ports(host: str, count: int) -> list[int]:
    """`count` distinct ports free on `host` right now (on any address if `host` is not local)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET))
            try:
                s.bind((host, 0))
            except OSError:  # a name or address of this node that cannot be bound here (NAT, a service name)
                s.bind(("", 0))
            ports.append(int(s.getsockname()[1]))
        return ports
