"""The launcher's settings, from flags and the environment (flags win), checked once at start.

`caldera launch` and `python -m caldera.launcher` share this one parser, so they accept the
same arguments and fail the same way: one line naming the flag, its environment variables
and the rule, exit code 2, no traceback (`SettingsError`).

Environment names: caldera's own first, then Paddle's (reference/job-interfaces.md §b.3), so
a pod written for `paddle.distributed.launch --elastic_server` runs unchanged.

`--host` (`POD_IP`) is the address peers use to reach this node's workers. Without it the
launcher takes the local address of the route to the elastic server (a connected UDP socket,
no packet sent): 127.0.0.1 when etcd is on loopback, the interface facing the cluster
otherwise. That is right on one machine and in a pod network, unlike the first address of the
host name, which is often 127.0.1.1 on Debian.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from caldera.core.errors import CalderaError
from caldera.launcher.spares import DEFAULT_PRELOAD

PROG = "caldera launch"
_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")


class SettingsError(CalderaError):
    """A missing or invalid setting: one line naming the flag, its environment variables and the rule."""


@dataclass(frozen=True, slots=True)
class Settings:
    server: str  # etcd host:port
    job_id: str
    lo: int  # MIN nodes
    hi: int  # MAX nodes
    nproc: int  # processes per node
    host: str  # this node's address for its workers' endpoints
    max_restarts: int
    elastic_timeout: float | None  # None: not configured (rounds.Limits.timeout says what that means)
    ttl: int  # lease TTL, whole seconds (etcd's unit)
    grace: float  # seconds between SIGTERM and SIGKILL when stopping workers
    pod: str  # the pod this launcher runs in (CALDERA_POD_NAME), "" outside a pod
    command: tuple[str, ...]
    preload: tuple[str, ...] = DEFAULT_PRELOAD  # modules warm spares import ahead of a round (spares.py)


@dataclass(frozen=True, slots=True)
class _Option:
    flag: str
    envs: tuple[str, ...]
    help: str

    def name(self) -> str:
        return " / ".join((self.flag, *self.envs))


SERVER = _Option("--elastic-server", ("CALDERA_ELASTIC_SERVER", "PADDLE_ELASTIC_SERVER"), "etcd HOST:PORT")
JOB_ID = _Option("--job-id", ("CALDERA_ELASTIC_JOB_ID", "PADDLE_ELASTIC_JOB_ID"), "the job's id (its keys' prefix)")
NP = _Option("--np", ("CALDERA_ELASTIC_NP", "PADDLE_ELASTIC_NP"), "nodes: N (fault tolerant) or MIN:MAX (elastic)")
NPROC = _Option("--nproc-per-node", ("CALDERA_NPROC_PER_NODE",), "worker processes on this node (default 1)")
HOST = _Option("--host", ("POD_IP",), "this node's address (default: the local address facing the elastic server)")
MAX_RESTARTS = _Option("--max-restarts", ("CALDERA_MAX_RESTARTS",), "failed rounds allowed in a row (default 3)")
TIMEOUT = _Option(
    "--elastic-timeout",
    ("CALDERA_ELASTIC_TIMEOUT", "PADDLE_ELASTIC_TIMEOUT"),
    "seconds of a stable node set before a round forms below the wanted size; without it, 30 when the size "
    "was announced (`caldera scale`, the daemon) and 0 otherwise: a round of the nodes there forms at once",
)
TTL = _Option("--ttl", ("CALDERA_ELASTIC_TTL", "PADDLE_ELASTIC_TTL"), "lease TTL in whole seconds (default 5)")
GRACE = _Option("--grace", ("CALDERA_GRACE",), "seconds between SIGTERM and SIGKILL for workers (default 5)")
PRELOAD = _Option(
    "--preload",
    ("CALDERA_PRELOAD",),
    "modules warm spare workers import before a round, comma-separated, or none (default: torch and what DDP imports)",
)
OPTIONS = (SERVER, JOB_ID, NP, NPROC, HOST, MAX_RESTARTS, TIMEOUT, TTL, GRACE, PRELOAD)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise SettingsError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Run a training command on this node as part of an elastic, fault-tolerant job "
        "(etcd rendezvous; torch and Paddle environment).",
        usage=f"{PROG} --elastic-server HOST:PORT --job-id ID --np N|MIN:MAX [options] -- COMMAND...",
        epilog="Each option can also come from the environment variables named in its help; flags win. "
        "Exit codes: 0 training completed, 1 failed (restart budget used up), 2 bad settings, 128+N stopped by signal N.",
    )
    for option in OPTIONS:
        dest = option.flag.removeprefix("--").replace("-", "_")
        p.add_argument(option.flag, dest=dest, metavar="VALUE", help=f"{option.help} [env: {', '.join(option.envs)}]")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the training command, after --")
    return p


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the command line (without the program name) and the environment."""
    env = os.environ if environ is None else environ
    args = vars(parser().parse_args(list(argv)))
    command = list(args.pop("command"))
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise SettingsError("no training command: put it after --, e.g. `caldera launch ... -- python train.py`")

    def raw(option: _Option) -> str | None:
        value = args[option.flag.removeprefix("--").replace("-", "_")]
        if value is None:
            value = next((env[e] for e in option.envs if env.get(e, "").strip()), None)
        return value.strip() if value is not None else None

    def need(option: _Option) -> str:
        value = raw(option)
        if not value:
            raise SettingsError(f"{option.name()}: required")
        return value

    server = _server(need(SERVER))
    job_id = need(JOB_ID)
    if not _JOB_ID.match(job_id):
        raise SettingsError(f"{JOB_ID.name()}: {job_id!r} must be letters, digits, '.', '_' or '-' (no '/')")
    lo, hi = _np(need(NP))
    host = raw(HOST) or default_host(server)
    return Settings(
        server=server,
        job_id=job_id,
        lo=lo,
        hi=hi,
        nproc=_int(NPROC, raw(NPROC), 1, minimum=1),
        host=host,
        max_restarts=_int(MAX_RESTARTS, raw(MAX_RESTARTS), 3, minimum=0),
        elastic_timeout=_optional_float(TIMEOUT, raw(TIMEOUT), minimum=0.0),
        ttl=_int(TTL, raw(TTL), 5, minimum=1),
        grace=_float(GRACE, raw(GRACE), 5.0, minimum=0.0),
        pod=env.get("CALDERA_POD_NAME", "").strip(),
        command=tuple(command),
        preload=_modules(PRELOAD, raw(PRELOAD)),
    )


def _modules(option: _Option, value: str | None) -> tuple[str, ...]:
    if value is None:
        return DEFAULT_PRELOAD
    if value.lower() == "none":
        return ()
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    bad = [n for n in names if not all(part.isidentifier() for part in n.split("."))]
    if bad:
        raise SettingsError(f"{option.name()}: {bad[0]!r} is not a module name (e.g. torch,numpy, or none)")
    return names


def _server(value: str) -> str:
    rest = value.removeprefix("http://").rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"{SERVER.name()}: {value!r} is not HOST:PORT")
    return rest


def _np(value: str) -> tuple[int, int]:
    lo_text, sep, hi_text = value.partition(":")
    try:
        lo = int(lo_text)
        hi = int(hi_text) if sep else lo
    except ValueError:
        raise SettingsError(f"{NP.name()}: {value!r} is not N or MIN:MAX") from None
    if lo < 1 or hi < lo:
        raise SettingsError(f"{NP.name()}: {value!r} needs 1 <= MIN <= MAX")
    return lo, hi


def _int(option: _Option, value: str | None, default: int, minimum: int) -> int:
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise SettingsError(f"{option.name()}: {value!r} is not a whole number") from None
    if number < minimum:
        raise SettingsError(f"{option.name()}: {number} must be at least {minimum}")
    return number


def _optional_float(option: _Option, value: str | None, minimum: float) -> float | None:
    return _float(option, value, 0.0, minimum) if value else None


def _float(option: _Option, value: str | None, default: float, minimum: float) -> float:
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        raise SettingsError(f"{option.name()}: {value!r} is not a number of seconds") from None
    if not number >= minimum or number == float("inf"):
        raise SettingsError(f"{option.name()}: {value!r} must be a finite number >= {minimum:g}")
    return number


def default_host(server: str) -> str:
    """The local address of the route to the elastic server; 127.0.0.1 if there is none."""
    host, _, port = server.rpartition(":")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host.strip("[]"), int(port)))
            address = s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    return str(address) if address and address != "0.0.0.0" else "127.0.0.1"


def usage_error(message: str) -> NoReturn:
    """Print a settings error as the one line the launcher promises, and exit 2."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(2)
