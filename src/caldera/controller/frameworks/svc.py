"""Volcano's `svc` plugin: every pod learns the hosts of every task of its job.

For each task, as Volcano's `<job>-svc` ConfigMap mounted at `/etc/volcano`:
- `VC_<TASK>_HOSTS` (comma-separated hosts, index order) and `VC_<TASK>_NUM` (replicas),
  as environment variables unless `--inject-hosts-env=false`, and as files of the same name;
- `etc/volcano/<task>.host`, one host per line. Unlike Volcano the last line ends with a
  newline too, so `while read host` loops see every host.
`<TASK>` is the task name upper-cased with `-` → `_`.

caldera adds `VC_<TASK>_ADDRS`: comma-separated `host:port` of each pod on the task's
first port (its manifest's first containerPort, else its framework's port), set when
the task has one. On the embedded cluster every host is 127.0.0.1, so the hosts alone
cannot tell pods apart; the mapped port can. `--publish-not-ready-addresses` and
`--disable-network-policy` concern Kubernetes objects and change nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence

from caldera.controller.frameworks.flags import bool_flag
from caldera.controller.frameworks.patch import PodPatch
from caldera.controller.frameworks.pod import PodRef, env_key
from caldera.core.objects import Job, TaskSpec

HOSTS_DIR = "etc/volcano"


def render(pod: PodRef, args: Sequence[str]) -> PodPatch:
    inject = bool_flag("svc", args, "inject-hosts-env", default=True)
    env: dict[str, str] = {}
    files: dict[str, str] = {}
    for task in pod.job.spec.tasks:
        members = pod.members(task)
        hosts = [pod.host(m) for m in members]
        key = env_key(task.name)
        values = {f"VC_{key}_HOSTS": ",".join(hosts), f"VC_{key}_NUM": str(task.replicas)}
        files[f"{HOSTS_DIR}/{task.name}.host"] = "".join(f"{h}\n" for h in hosts)
        files.update({f"{HOSTS_DIR}/{name}": value for name, value in values.items()})
        if inject:
            env.update(values)
            task_ports = pod.ports.get(task.name, ())
            if task_ports:
                env[f"VC_{key}_ADDRS"] = ",".join(pod.endpoint(m, task_ports[0]) for m in members)
    return PodPatch(env=env, files=files)


def ports(job: Job, task: TaskSpec, args: Sequence[str]) -> tuple[int, ...]:
    return ()
