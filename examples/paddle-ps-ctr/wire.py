"""The parameter-server protocol: length-prefixed messages over a plain TCP connection.

A message is a fixed header, a JSON object, then the raw bytes of zero or more numpy
arrays whose dtype and length the JSON lists under "arrays":

    magic b"CTR1" | JSON length (u32) | payload length (u32) | JSON | payload

Requests (the trainer speaks first, one reply per request, on a long-lived connection):

    {"op": "hello"}                                    -> {"pserver_id", "pservers", "hash_space"}
    {"op": "pull"} + keys (uint64)                     -> + weights (float32), one per key
    {"op": "push"} + keys (uint64) + gradients (f32)   -> {"ok": true}

A request the server cannot serve is answered with {"error": "..."}.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

import numpy as np

MAGIC = b"CTR1"
_HEADER = struct.Struct("!4sII")
MAX_MESSAGE = 256 << 20  # refuse anything absurd rather than allocate it


class ProtocolError(RuntimeError):
    """The peer sent something that is not a message of this protocol, or closed mid-message."""


def send_message(sock: socket.socket, meta: dict[str, Any], *arrays: np.ndarray) -> None:
    meta = {**meta, "arrays": [[a.dtype.str, len(a)] for a in arrays]}
    body = json.dumps(meta).encode()
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)
    # One sendall per message: with TCP_NODELAY set this is one round trip per request.
    sock.sendall(_HEADER.pack(MAGIC, len(body), len(payload)) + body + payload)


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    """Exactly `size` bytes, or None if the peer closed the connection before the first byte."""
    buffer = bytearray(size)
    view, received = memoryview(buffer), 0
    while received < size:
        n = sock.recv_into(view[received:])
        if n == 0:
            if received == 0:
                return None
            raise ProtocolError(f"connection closed after {received} of {size} bytes")
        received += n
    return bytes(buffer)


def recv_message(sock: socket.socket) -> tuple[dict[str, Any], list[np.ndarray]] | None:
    """The next message, or None when the peer has closed the connection cleanly."""
    header = _recv_exact(sock, _HEADER.size)
    if header is None:
        return None
    magic, body_len, payload_len = _HEADER.unpack(header)
    if magic != MAGIC or body_len + payload_len > MAX_MESSAGE:
        raise ProtocolError("not a parameter-server message")
    data = _recv_exact(sock, body_len + payload_len)
    if data is None:
        raise ProtocolError("connection closed after a message header")
    meta: dict[str, Any] = json.loads(data[:body_len])
    arrays, offset = [], body_len
    for dtype_str, length in meta.pop("arrays", []):
        dtype = np.dtype(dtype_str)
        arrays.append(np.frombuffer(data, dtype=dtype, count=length, offset=offset))
        offset += dtype.itemsize * length
    if offset != len(data):
        raise ProtocolError("payload length does not match the arrays announced")
    return meta, arrays


def configure(sock: socket.socket) -> None:
    # Small request/reply messages: disable Nagle's algorithm, or each reply may wait
    # for the peer's delayed ACK (tens of milliseconds per request).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
