"""Pods as local processes: what the kubelet does, on the embedded cluster.

For each pod the runtime renders one process from its first container: the
command and args; the environment (the daemon's PATH with caldera's Python
first, PYTHONPYCACHEPREFIX under the home so that no pod writes bytecode into a
source tree, caldera's or the user's; the container's `env` with fieldRefs
resolved, then the framework plugins' variables, which win as they do in Volcano, then CUDA_VISIBLE_DEVICES);
the working directory (`workingDir`, relative to where the job was submitted,
else the pod's own directory); the plugins' files and `--data`, made reachable
from where the command runs (`podpaths.py`: relative targets are links in the
working directory, absolute ones and the plugins' files are mapped in the
command, its arguments, the container's environment and workingDir). The image
cannot be run here: it is reported once per job as ignored.

Invariants: every port a pod declares (in its manifest or through a plugin
flag) maps to a host port allocated once per job, so all pods of a job agree
on each other's addresses and two jobs never collide; a GPU id is held by at
most one pod of a node at a time.
"""

from __future__ import annotations

import hashlib
import os
import random
import socket
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from caldera.backends.local import ProcessSpec
from caldera.controller.frameworks import ports_of, render
from caldera.core import objects as o
from caldera.core.addresses import MappedAddresses
from caldera.core.elastic import launcher_env, max_replicas
from caldera.core.resources import GPU
from caldera.launcher.zygote import STARTER_VAR
from caldera.launcher.zygotestarter import ZygoteStarter
from caldera.system.podpaths import DATA, link_relative, parse_data, path_map, rewrite
from caldera.system.zygoteusers import ZygoteUsers

HOST = "127.0.0.1"
SUBMIT_DIR = "caldera.dev/submit-dir"
PASS_THROUGH = ("HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "TERM")
PORTS_FROM = 20_000  # pods' and TensorBoards' host ports are drawn from here to the ephemeral range
PYCACHE = "pycache"  # under the home: where the pods' Python processes keep their bytecode


class PortBook:
    """Host ports for the container ports of every pod of every job."""

    def __init__(self) -> None:
        self._jobs: dict[str, dict[tuple[str, int], int]] = {}
        self._used: set[int] = set()
        self._random = random.Random()

    def for_job(self, job: o.Job) -> dict[tuple[str, int], int]:
        """Every (pod, container port) of the job → its host port, allocating what is missing."""
        ports = self._jobs.setdefault(job.key, {})
        for task in job.spec.tasks:
            for index in range(max_replicas(job, task)):  # an elastic task's pods may have any index below its max
                for port in ports_of(job, task):
                    slot = (f"{job.name}-{task.name}-{index}", port)
                    if slot not in ports:
                        ports[slot] = self._free_port()
        return ports

    def restore(self, job_key: str, ports: Mapping[tuple[str, int], int]) -> None:
        """Ports a job had before the daemon restarted (its running pods were told them)."""
        self._jobs.setdefault(job_key, {}).update(ports)
        self._used.update(ports.values())

    def holds(self, job_key: str) -> bool:
        """Whether host ports are held for this job."""
        return job_key in self._jobs

    def release(self, job_key: str) -> None:
        for port in self._jobs.pop(job_key, {}).values():
            self._used.discard(port)

    def allocate(self) -> int:
        """A free host port for something else than a pod (a job's TensorBoard), held until `free`."""
        return self._free_port()

    def claim(self, port: int) -> bool:
        """Hold `port` (one a process was told before a restart); False if this book holds it already."""
        if port in self._used:
            return False
        self._used.add(port)
        return True

    def free(self, port: int) -> None:
        self._used.discard(port)

    def _free_port(self) -> int:
        """A port nothing listens on, below the kernel's ephemeral range when there is room.

        Between this choice and the pod's bind the port is only reserved in this book. A port
        the kernel hands out for port 0 is also what it gives outgoing connections (any HTTP
        client on the machine): one could take it meanwhile, and the pod could not listen.
        Below that range only another listener can, which is rare; the bind check skips those."""
        low = _ephemeral_low()
        for _ in range(100):
            port = self._random.randrange(PORTS_FROM, low) if low > PORTS_FROM else 0
            if port and (port in self._used or not bindable(port)):
                continue
            if not port:
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                    s.bind((HOST, 0))
                    port = int(s.getsockname()[1])
                if port in self._used:
                    continue
            self._used.add(port)
            return port
        raise RuntimeError("no free port found for a pod")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (where port 0 and outgoing connections draw from)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def bindable(port: int) -> bool:
    """Whether a listener could bind `port` on HOST now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


class GpuBook:
    """Which GPU ids of each node each pod holds (node n of N gets ids n·g … n·g+g−1 of the machine)."""

    def __init__(self, gpus_per_node: Mapping[str, int], offsets: Mapping[str, int]) -> None:
        self._free = {
            node: set(range(offsets.get(node, 0), offsets.get(node, 0) + n)) for node, n in gpus_per_node.items()
        }
        self._held: dict[str, tuple[str, list[int]]] = {}

    def assign(self, pod: str, node: str, count: int) -> list[int]:
        held = self._held.get(pod)
        if held is not None:
            return held[1]
        free = sorted(self._free.get(node, set()))
        if count > len(free):
            raise RuntimeError(f"node {node} has {len(free)} free GPUs, pod {pod} needs {count}")
        ids = free[:count]
        self._free[node].difference_update(ids)
        self._held[pod] = (node, ids)
        return ids

    def restore(self, pod: str, node: str, ids: list[int]) -> None:
        """A pod a previous daemon ran holds these ids again (its process was told them: not others); ids this
        node does not have (fewer GPUs now) or another pod holds are left out."""
        free = self._free.get(node, set())
        kept = [i for i in ids if i in free]
        free.difference_update(kept)
        self._held[pod] = (node, kept)

    def release(self, pod: str) -> None:
        held = self._held.pop(pod, None)
        if held is not None:
            self._free[held[0]].update(held[1])

    def held(self, pod: str) -> list[int]:
        return self._held.get(pod, ("", []))[1]

    def holders(self) -> dict[str, tuple[str, list[int]]]:
        """Every pod holding GPUs: pod key → (its node, the ids)."""
        return {pod: held for pod, held in self._held.items() if held[1]}


class Processes(Protocol):
    """Where the runtime's processes go: the local executor, or `HeldEffects` in front of it."""

    def run(self, spec: ProcessSpec) -> None: ...

    def stop(self, key: str, grace: float | None = None) -> None: ...


class LocalRuntime:
    """The control plane's executor on the embedded cluster."""

    def __init__(
        self,
        home: Path,
        executor: Processes,
        job_of: Callable[[str], o.Job | None],
        gpus: GpuBook,
        notify: Callable[[str, str, str, str], None],
    ) -> None:
        self.home = home
        self.executor = executor
        self.job_of = job_of
        self.ports = PortBook()
        self.gpus = gpus
        self.notify = notify  # (namespace, object, reason, message): an event for people
        self._images_reported: set[str] = set()
        self.attempts: dict[str, int] = {}
        self.elastic_server = ""  # host:port of etcd for elastic pods' launchers ("" if none)
        self.zygotes: ZygoteStarter | None = None  # starts the zygote elastic pods share (`serve_zygotes`)
        self._zygote_users = ZygoteUsers()  # the elastic pods started with the starter's name: when zygotes may stop
        # What every pod's environment starts from, read once (the daemon's own environment does not change).
        # Bytecode goes under the home, not next to the sources a pod imports (caldera's, the user's).
        self._base_env = {**self.base_env(), "PYTHONPYCACHEPREFIX": str(home / PYCACHE)}

    def serve_zygotes(self) -> None:
        """Start the machine's zygote starter, whose zygotes outlive the pods that asked for them
        (launcher/zygotestarter.py); without it (its name is taken), every launcher has its own."""
        name = "caldera-zygote-starter-" + hashlib.sha256(str(self.home.resolve()).encode()).hexdigest()[:24]
        try:
            self.zygotes = ZygoteStarter(name)
        except OSError:
            self.zygotes = None

    def close_zygotes(self, stop: bool) -> None:
        """Stop starting zygotes; with `stop`, stop those started (else they exit when idle)."""
        if self.zygotes is not None:
            self.zygotes.close(stop_zygotes=stop)
            self.zygotes = None

    def pod_dir(self, pod: o.Pod) -> Path:
        return self.home / "pods" / pod.namespace / pod.name

    def start(self, pod: o.Pod, node: o.Node) -> None:
        job = self.job_of(pod.job_key)
        task = job.spec.task(pod.task) if job is not None else None
        if job is None or task is None or not pod.spec.containers:
            raise RuntimeError(f"pod {pod.key} has no job, task or container to run")
        container = pod.spec.containers[0]
        if container.image and job.key not in self._images_reported:
            self._images_reported.add(job.key)
            self.notify(
                pod.namespace,
                job.name,
                "ImageIgnored",
                f"image {container.image} is not run here: the embedded cluster runs the command as a local process",
            )
        pod_dir = self.pod_dir(pod)
        addresses = MappedAddresses(HOST, self.ports.for_job(job))
        patch = render(job, task, pod.index, addresses, pod_dir=str(pod_dir))
        gpus = self.gpus.assign(pod.key, node.name, int(pod.spec.requests().get(GPU, 0.0) / 1000))
        try:
            mounts = parse_data(pod.metadata.annotations.get(DATA, ""))
        except ValueError as e:  # admission refuses these: a pod from an older daemon, say so and run without
            self.notify(pod.namespace, pod.name, "DataIgnored", f"{DATA}: {e}")
            mounts = []
        paths = path_map(mounts, pod_dir, patch.files)
        env = dict(self._base_env)
        env.update({k: rewrite(v, paths) for k, v in _container_env(container, pod, node).items()})
        env.update(patch.env)
        if elastic := launcher_env(job, pod.task, pod.name, self.elastic_server):
            env.update(elastic)
            env["POD_IP"] = HOST
            if self.zygotes is not None:  # the machine's launchers share its zygote (launcher/zygote.py)
                env[STARTER_VAR] = self.zygotes.name
                self._zygote_users.started(pod.key, job.key)
        env.update(
            {
                "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus),
                "CALDERA_JOB": job.name,
                "CALDERA_NAMESPACE": pod.namespace,
                "CALDERA_POD": pod.name,
                "CALDERA_TASK": pod.task,
                "CALDERA_INDEX": str(pod.index),
                "CALDERA_NODE": node.name,
                "CALDERA_POD_DIR": str(pod_dir),
            }
        )
        cwd = working_dir(container, job, pod_dir, paths)
        for problem in link_relative(cwd, mounts):
            self.notify(pod.namespace, pod.name, "DataLinkFailed", problem)
        attempt = self.attempts.get(pod.key, -1) + 1
        self.attempts[pod.key] = attempt
        self.executor.run(
            ProcessSpec(
                key=pod.key,
                argv=tuple(rewrite(word, paths) for word in (*container.command, *container.args)),
                env=env,
                cwd=str(cwd),
                pod_dir=str(pod_dir),
                files=dict(patch.files),
                attempt=attempt,
            )
        )

    def job_deleted(self, job_key: str) -> None:
        """The job is gone: its host ports are free, and nothing is kept under its key."""
        self.ports.release(job_key)
        self._images_reported.discard(job_key)
        if self._zygote_users.job_deleted(job_key) and self.zygotes is not None:
            self.zygotes.stop_zygotes()

    def stop(self, pod: o.Pod) -> None:
        self.executor.stop(pod.key, grace=pod.spec.termination_grace_period_seconds)

    def released(self, pod_key: str) -> None:
        """The pod's process is gone for good: its GPUs are free again (and the zygotes stop, when no job that
        may start an elastic pod again is left: system/zygoteusers.py)."""
        self.gpus.release(pod_key)
        if self._zygote_users.released(pod_key) and self.zygotes is not None:
            self.zygotes.stop_zygotes()

    def address(self, job: o.Job, pod: str) -> str:
        """host:port of the pod's first declared port, for people (`caldera get`)."""
        task = next((t for t in job.spec.tasks if pod.startswith(f"{job.name}-{t.name}-")), None)
        ports = ports_of(job, task) if task is not None else ()
        if not ports:
            return HOST
        mapped = self.ports.for_job(job).get((pod, ports[0]))
        return f"{HOST}:{mapped}" if mapped else HOST

    @staticmethod
    def base_env() -> dict[str, str]:
        """What every pod starts from: a few of the daemon's variables, and caldera's Python first on PATH."""
        python_dir = str(Path(sys.executable).parent)
        path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
        env["PATH"] = f"{python_dir}{os.pathsep}{path}"
        env["PYTHONUNBUFFERED"] = "1"
        return env


def working_dir(container: o.Container, job: o.Job, pod_dir: Path, paths: Mapping[str, str]) -> Path:
    """Where the pod's command runs: its `workingDir` (mapped; relative to where the job was submitted),
    else the pod's own directory."""
    base = job.metadata.annotations.get(SUBMIT_DIR)
    if container.working_dir:
        wd = Path(rewrite(container.working_dir, paths))
        return wd if wd.is_absolute() or not base else Path(base) / wd
    return pod_dir


def _container_env(container: o.Container, pod: o.Pod, node: o.Node) -> dict[str, str]:
    fields = {
        "metadata.name": pod.name,
        "metadata.namespace": pod.namespace,
        "status.podIP": HOST,
        "status.hostIP": HOST,
        "spec.nodeName": node.name,
    }
    env: dict[str, str] = {}
    for var in container.env:
        if var.field_path is not None:
            env[var.name] = fields.get(var.field_path, "")
        elif var.value is not None:
            env[var.name] = var.value
    return env
