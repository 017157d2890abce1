"""Where a pod's `--data` and plugin files are on this machine: links for relative targets, mapping for absolute ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from caldera.system.podpaths import DataMount, link_relative, parse_data, path_map, rewrite

POD = Path("/home/u/.caldera/pods/default/j-worker-0")
PATHS = path_map(
    [DataMount("/data/mnist", "/mnist_data"), DataMount("/data/ckpt", "ckpt")],
    POD,
    ["etc/volcano/worker.host", "etc/volcano/VC_WORKER_NUM", "etc/mpi/hostfile"],
)


def test_the_map_holds_absolute_targets_and_the_pods_files() -> None:
    mapped = dict(PATHS)
    assert mapped == {
        "/mnist_data": "/data/mnist",
        "/etc/volcano/worker.host": f"{POD}/etc/volcano/worker.host",
        "/etc/volcano/VC_WORKER_NUM": f"{POD}/etc/volcano/VC_WORKER_NUM",
        "/etc/volcano": f"{POD}/etc/volcano",
        "/etc/mpi/hostfile": f"{POD}/etc/mpi/hostfile",
        "/etc/mpi": f"{POD}/etc/mpi",
    }  # relative targets are links, not mapped; /etc itself never


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("/mnist_data", "/data/mnist", id="the-target"),
        pytest.param("/mnist_data/pytorch_data/", "/data/mnist/pytorch_data/", id="under-it"),
        pytest.param("--data=/mnist_data/x", "--data=/data/mnist/x", id="in-a-flag"),
        pytest.param(
            "python t.py --dir /mnist_data/logs --data /mnist_data",
            "python t.py --dir /data/mnist/logs --data /data/mnist",
            id="in-a-shell-line",
        ),
        pytest.param("cat /etc/volcano/worker.host", f"cat {POD}/etc/volcano/worker.host", id="svc-file"),
        pytest.param("ls /etc/volcano", f"ls {POD}/etc/volcano", id="svc-dir"),
        pytest.param("mpirun --hostfile /etc/mpi/hostfile", f"mpirun --hostfile {POD}/etc/mpi/hostfile", id="hostfile"),
        pytest.param("/mnist_data2", "/mnist_data2", id="another-name"),
        pytest.param("/x/mnist_data", "/x/mnist_data", id="elsewhere"),
        pytest.param("mnist_data", "mnist_data", id="relative"),
        pytest.param("/etc/passwd", "/etc/passwd", id="the-hosts-etc"),
        pytest.param("/mnist_data.bak", "/mnist_data.bak", id="a-suffix"),
    ],
)
def test_rewrite_replaces_whole_paths_only(text: str, want: str) -> None:
    assert rewrite(text, PATHS) == want


@pytest.mark.parametrize("spec", ["a:b", "/a", "/a:", "rel:b", "/a:/", "/a:.", "/a:../up", "/a:x/../../y"])
def test_bad_data_is_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_data(spec)


def test_relative_targets_are_links_in_the_working_directory(tmp_path: Path) -> None:
    source = tmp_path / "mnist"
    source.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    mounts = parse_data(f"{source}:mnist_data,{source}:deep/er,{source}:/abs")
    assert link_relative(work, mounts) == []
    assert (work / "mnist_data").resolve() == source and (work / "deep" / "er").resolve() == source
    assert not (work / "abs").exists()
    assert link_relative(work, mounts) == []  # again (the next pod, the next attempt): nothing to do


def test_a_link_never_replaces_something_else(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "other").symlink_to("/somewhere")
    problems = link_relative(tmp_path, parse_data("/data/a:mine,/data/a:other"))
    assert problems == [
        f"{tmp_path}/mine exists and is not a link to /data/a",
        f"{tmp_path}/other is a link to /somewhere, not to /data/a",
    ]
    assert (tmp_path / "mine").is_dir() and str((tmp_path / "other").readlink()) == "/somewhere"
