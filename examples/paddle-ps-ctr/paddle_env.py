"""The PaddlePaddle parameter-server environment, read the way Paddle's role maker reads it.

Variables (set by caldera's `paddle` plugin, paddle-operator, or by hand):

    TRAINING_ROLE                  PSERVER or TRAINER (PADDLE_TRAINING_ROLE is accepted too)
    PADDLE_PSERVERS_IP_PORT_LIST   ip:port of every parameter server, in server-id order
    PADDLE_TRAINER_ENDPOINTS       ip:port of every trainer, in trainer-id order
    PADDLE_TRAINERS_NUM            how many trainers
    PADDLE_TRAINER_ID              this trainer's id, 0-based (trainers)
    PADDLE_PORT, POD_IP            where this pod listens; a server's id is the position
                                   of POD_IP:PADDLE_PORT in PADDLE_PSERVERS_IP_PORT_LIST
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ROLES = ("PSERVER", "TRAINER")


class EnvError(ValueError):
    """The environment does not describe a parameter-server job."""


@dataclass(frozen=True)
class PaddleEnv:
    role: str
    pservers: tuple[str, ...]  # "ip:port", index = server id
    trainer_endpoints: tuple[str, ...]
    trainers_num: int
    trainer_id: int | None  # set for trainers
    pserver_id: int | None  # set for parameter servers
    pod_ip: str | None
    port: int | None

    @property
    def endpoint(self) -> str:
        return f"{self.pod_ip}:{self.port}"


def _require(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise EnvError(f"{name} is not set")
    return value


def _int(environ: Mapping[str, str], name: str) -> int:
    value = _require(environ, name)
    try:
        return int(value)
    except ValueError:
        raise EnvError(f"{name}={value!r} is not an integer") from None


def _endpoints(value: str) -> tuple[str, ...]:
    return tuple(e.strip() for e in value.split(",") if e.strip())


def split_endpoint(endpoint: str) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise EnvError(f"{endpoint!r} is not an ip:port endpoint")
    return host, int(port)


def read_paddle_env(environ: Mapping[str, str]) -> PaddleEnv:
    role = (environ.get("TRAINING_ROLE") or environ.get("PADDLE_TRAINING_ROLE") or "").strip().upper()
    if role not in ROLES:
        raise EnvError(f"TRAINING_ROLE must be one of {', '.join(ROLES)}, not {role or 'unset'!r}")
    pservers = _endpoints(_require(environ, "PADDLE_PSERVERS_IP_PORT_LIST"))
    for endpoint in pservers:
        split_endpoint(endpoint)
    trainers_num = _int(environ, "PADDLE_TRAINERS_NUM")
    if trainers_num < 1:
        raise EnvError(f"PADDLE_TRAINERS_NUM={trainers_num} must be at least 1")
    trainer_endpoints = _endpoints(environ.get("PADDLE_TRAINER_ENDPOINTS", ""))
    if trainer_endpoints and len(trainer_endpoints) != trainers_num:
        raise EnvError(
            f"PADDLE_TRAINER_ENDPOINTS lists {len(trainer_endpoints)} trainers but PADDLE_TRAINERS_NUM={trainers_num}"
        )
    pod_ip = environ.get("POD_IP", "").strip() or None
    port = _int(environ, "PADDLE_PORT") if environ.get("PADDLE_PORT", "").strip() else None

    trainer_id = pserver_id = None
    if role == "TRAINER":
        trainer_id = _int(environ, "PADDLE_TRAINER_ID")
        if not 0 <= trainer_id < trainers_num:
            raise EnvError(f"PADDLE_TRAINER_ID={trainer_id} is outside 0..{trainers_num - 1}")
    else:
        if pod_ip is None or port is None:
            raise EnvError("a parameter server needs POD_IP and PADDLE_PORT (where it listens)")
        me = f"{pod_ip}:{port}"
        if me not in pservers:
            raise EnvError(f"POD_IP:PADDLE_PORT {me} is not in PADDLE_PSERVERS_IP_PORT_LIST {','.join(pservers)}")
        pserver_id = pservers.index(me)
    return PaddleEnv(role, pservers, trainer_endpoints, trainers_num, trainer_id, pserver_id, pod_ip, port)
