"""Paths a pod is given, on a machine without containers: where `--data` and the plugins' files really are.

On Kubernetes a pod sees what it is given at absolute paths: `arena submit --data pvc:/mnist_data`
mounts at /mnist_data, Volcano's svc plugin its hosts files at /etc/volcano, mpi-operator its
hostfile at /etc/mpi/hostfile. The embedded cluster runs a pod as a plain process in its working
directory (where the job was submitted, or its `workingDir`), with no mount namespace, so:

- a relative data target (`--data SRC:mnist_data`) is a symlink to SRC in the pod's working
  directory, where the command resolves `mnist_data`; it stays there after the job, like
  anything else the job writes there;
- an absolute target (`--data SRC:/mnist_data`, Arena's form) and the plugins' files
  (`/etc/volcano/<task>.host`, `/etc/mpi/hostfile`, kept in the pod's directory) are *mapped*:
  in the command and its arguments, the container's environment values and its `workingDir`,
  a path that is one of them or lies under it is replaced by where it really is (SRC, or the
  file in the pod's directory). A path put together at run time is not seen: use a relative
  target, or the variables that name files (always absolute: OMPI_MCA_orte_default_hostfile,
  CALDERA_POD_DIR).

Invariant: only whole path components are replaced: `/mnist_data2` and `/x/mnist_data` stay.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

DATA = "caldera.dev/data"  # "SRC:DST,...": host directory SRC is seen at DST in the pod (see above)
_PATH_CHAR = r"[\w.~/-]"


@dataclass(frozen=True, slots=True)
class DataMount:
    source: str  # an absolute host path
    target: str  # relative to the working directory, or absolute (mapped)


def parse_data(spec: str) -> list[DataMount]:
    """The mounts of a `caldera.dev/data` annotation; ValueError naming the entry and the rule."""
    mounts = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        source, colon, target = item.rpartition(":")
        if not colon or not source or not target:
            raise ValueError(f"{item!r} is not SRC:DST")
        if not posixpath.isabs(source):
            raise ValueError(f"{item!r}: SRC must be an absolute path on this machine")
        normal = posixpath.normpath(target)
        if normal in ("/", ".") or ".." in normal.split("/"):
            raise ValueError(f"{item!r}: DST must name a directory below / or below the working directory")
        mounts.append(DataMount(source, normal))
    return mounts


def path_map(mounts: Iterable[DataMount], pod_dir: Path | None = None, files: Iterable[str] = ()) -> dict[str, str]:
    """Path in the pod → path on this machine: absolute data targets, and the pod's files with their directories.

    `files` are the plugins' files, relative to `pod_dir` (`etc/volcano/worker.host` is /etc/volcano/worker.host)."""
    out = {m.target: m.source for m in mounts if posixpath.isabs(m.target)}
    if pod_dir is not None:
        for name in files:
            rel = posixpath.normpath(name)
            out["/" + rel] = str(pod_dir / rel)
            parent = posixpath.dirname(rel)
            if "/" in parent:  # /etc/volcano, /etc/mpi; never /etc itself
                out["/" + parent] = str(pod_dir / parent)
    return out


def rewrite(text: str, mapping: Mapping[str, str]) -> str:
    """`text` with each whole path of `mapping` (or a path under it) replaced by where it really is."""
    if not mapping or "/" not in text:
        return text
    keys = sorted(mapping, key=len, reverse=True)  # /etc/mpi/hostfile before /etc/mpi
    pattern = re.compile(rf"(?<!{_PATH_CHAR})({'|'.join(re.escape(k) for k in keys)})(?![\w.~-])")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def link_relative(workdir: Path, mounts: Iterable[DataMount]) -> list[str]:
    """Make each relative target a symlink to its source in `workdir`; what could not be done, for people."""
    problems = []
    for m in mounts:
        if posixpath.isabs(m.target):
            continue
        link = workdir / m.target
        why = conflict(link, m.source)
        if why:
            problems.append(why)
            continue
        if link.is_symlink():
            continue  # already the link asked for
        try:
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(m.source)
        except OSError as e:
            problems.append(f"cannot link {link} to {m.source}: {e.strerror}")
    return problems


def conflict(link: Path, source: str) -> str:
    """Why `link` cannot be made a symlink to `source` ("" if it can, or already is one)."""
    if link.is_symlink():
        there = os.readlink(link)
        return "" if there == source else f"{link} is a link to {there}, not to {source}"
    if link.exists():
        return f"{link} exists and is not a link to {source}"
    return ""
