"""Settings from flags and the environment; bad ones are one line naming the flag and its variables, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from caldera.launcher.settings import SettingsError, default_host, parse

SERVER = {"CALDERA_ELASTIC_SERVER": "127.0.0.1:2379"}
CMD = ["--", "python", "train.py", "--lr", "0.1"]


def test_flags_and_defaults():
    s = parse(["--elastic-server", "10.0.0.5:2379", "--job-id", "j1", "--np", "2:4", *CMD], {})
    assert (s.server, s.job_id, s.lo, s.hi) == ("10.0.0.5:2379", "j1", 2, 4)
    assert (s.nproc, s.max_restarts, s.elastic_timeout, s.ttl, s.grace) == (
        1,
        3,
        None,
        5,
        5.0,
    )  # no timeout: see rounds
    assert s.command == ("python", "train.py", "--lr", "0.1") and s.pod == ""


def test_np_n_means_fault_tolerance():
    s = parse(["--job-id", "j", "--np", "3", *CMD], SERVER)
    assert (s.lo, s.hi) == (3, 3)


def test_paddle_environment_names_work_and_caldera_names_win():
    env = {
        "PADDLE_ELASTIC_SERVER": "etcd:2379",
        "PADDLE_ELASTIC_JOB_ID": "paddle-job",
        "PADDLE_ELASTIC_NP": "2",
        "PADDLE_ELASTIC_TIMEOUT": "60",
        "PADDLE_ELASTIC_TTL": "10",
        "POD_IP": "10.1.2.3",
        "CALDERA_POD_NAME": "job-worker-1",
    }
    s = parse(CMD, env)
    assert (s.server, s.job_id, s.lo, s.hi, s.elastic_timeout, s.ttl) == ("etcd:2379", "paddle-job", 2, 2, 60.0, 10)
    assert (s.host, s.pod) == ("10.1.2.3", "job-worker-1")
    s = parse(CMD, {**env, "CALDERA_ELASTIC_JOB_ID": "mine", "CALDERA_ELASTIC_NP": "1:3"})
    assert (s.job_id, s.lo, s.hi) == ("mine", 1, 3)


def test_flags_win_over_the_environment():
    env = {**SERVER, "CALDERA_ELASTIC_JOB_ID": "env", "CALDERA_ELASTIC_NP": "3", "CALDERA_NPROC_PER_NODE": "2"}
    s = parse(["--job-id", "flag", "--np", "2", "--nproc-per-node", "4", "--host", "1.2.3.4", *CMD], env)
    assert (s.job_id, s.lo, s.nproc, s.host) == ("flag", 2, 4, "1.2.3.4")


def test_the_default_host_faces_the_elastic_server():
    assert default_host("127.0.0.1:2379") == "127.0.0.1"
    assert parse(["--job-id", "j", "--np", "1", *CMD], SERVER).host == "127.0.0.1"


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            ["--job-id", "j", "--np", "2", *CMD],
            {},
            "--elastic-server / CALDERA_ELASTIC_SERVER / PADDLE_ELASTIC_SERVER: required",
        ),
        (["--np", "2", *CMD], SERVER, "--job-id / CALDERA_ELASTIC_JOB_ID / PADDLE_ELASTIC_JOB_ID: required"),
        (["--job-id", "j", *CMD], SERVER, "--np / CALDERA_ELASTIC_NP / PADDLE_ELASTIC_NP: required"),
        (["--job-id", "j", "--np", "two", *CMD], SERVER, "'two' is not N or MIN:MAX"),
        (["--job-id", "j", "--np", "4:2", *CMD], SERVER, "'4:2' needs 1 <= MIN <= MAX"),
        (["--job-id", "j", "--np", "0", *CMD], SERVER, "'0' needs 1 <= MIN <= MAX"),
        (["--job-id", "a/b", "--np", "2", *CMD], SERVER, "(no '/')"),
        (
            ["--job-id", "j", "--np", "2", "--ttl", "0", *CMD],
            SERVER,
            "--ttl / CALDERA_ELASTIC_TTL / PADDLE_ELASTIC_TTL: 0 must be at least 1",
        ),
        (
            ["--job-id", "j", "--np", "2", "--elastic-timeout", "soon", *CMD],
            SERVER,
            "'soon' is not a number of seconds",
        ),
        (["--job-id", "j", "--np", "2", "--nproc-per-node", "1.5", *CMD], SERVER, "'1.5' is not a whole number"),
        (["--job-id", "j", "--np", "2"], SERVER, "no training command"),
        (["--job-id", "j", "--np", "2", *CMD], {"CALDERA_ELASTIC_SERVER": "nohost"}, "'nohost' is not HOST:PORT"),
        (["--job-id", "j", "--np", "2", *CMD], {"PADDLE_ELASTIC_SERVER": "h:99999"}, "'h:99999' is not HOST:PORT"),
    ],
    ids=[
        "no-server",
        "no-job-id",
        "no-np",
        "np-not-a-number",
        "np-min-above-max",
        "np-zero",
        "job-id-with-slash",
        "ttl-zero",
        "timeout-not-a-number",
        "nproc-not-whole",
        "no-command",
        "server-without-port",
        "server-port-out-of-range",
    ],
)
def test_bad_settings_name_the_flag_and_the_rule(argv, env, message):
    with pytest.raises(SettingsError) as caught:
        parse(argv, env)
    assert message in str(caught.value)


CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("CALDERA_ELASTIC", "PADDLE_ELASTIC"))}


@pytest.mark.parametrize(
    "entry",
    [["-m", "caldera.launcher"], ["-m", "caldera.cli.main", "launch"]],
    ids=["python-m-caldera.launcher", "caldera-launch"],
)
@pytest.mark.parametrize(
    "argv",
    [
        ["--np", "2", "--", "true"],
        ["--elastic-server", "h:1", "--job-id", "j", "--np", "3:1", "--", "true"],
        ["--bogus"],
    ],
    ids=["missing-server", "bad-np", "unknown-flag"],
)
def test_both_entry_points_fail_the_same_way_in_one_line_with_exit_2(entry, argv):
    result = subprocess.run(
        [sys.executable, *entry, *argv], capture_output=True, text=True, env=CLEAN_ENV, timeout=60, check=False
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("caldera launch: error: ")
