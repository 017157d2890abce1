"""`python -m caldera.launcher.gitsync --repo SRC [--branch B] -- COMMAND...`: clone, then run the command.

What Arena's `--sync-mode git` does with its git-sync init container, in the pod itself
(`caldera submit ... --sync-mode git --sync-source SRC`): the repository SRC (a URL or a
local repository's path) is cloned, at its default branch or at `--branch`, into
`code/<repository name>` under the directory the pod runs in, then COMMAND replaces this
process (exec: same pid, signals and exit code). Every start of the pod clones afresh, as
Arena's init container fills an empty volume: a restarted pod runs the code as it is now.
A failed clone ends the pod with exit code 1 and git's own message in its log.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

CODE_DIR = "code"


def repository_name(source: str) -> str:
    """The directory a clone of `source` gets: its last path part without `.git` (git's own rule)."""
    name = source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return name.removesuffix(".git") or "repository"


def clone(source: str, branch: str | None, dest: Path) -> None:
    """A fresh shallow clone of `source` (at `branch`) in `dest`; raises CalledProcessError with git's message."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # file:// makes git honour --depth for a local path too (a plain path would copy every object).
    url = Path(source).resolve().as_uri() if "://" not in source and Path(source).exists() else source
    command = ["git", "clone", "--quiet", "--depth", "1", *(["--branch", branch] if branch else []), url, str(dest)]
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        print("caldera gitsync: usage: --repo SRC [--branch B] -- COMMAND...", file=sys.stderr)
        return 2
    at = args.index("--")
    parser = argparse.ArgumentParser(prog="python -m caldera.launcher.gitsync")
    parser.add_argument("--repo", required=True)
    parser.add_argument("--branch")
    opts = parser.parse_args(args[:at])
    command = args[at + 1 :]
    if not command:
        print("caldera gitsync: the command after -- is missing", file=sys.stderr)
        return 2
    dest = Path(CODE_DIR) / repository_name(opts.repo)
    at_branch = f" at {opts.branch}" if opts.branch else ""
    try:
        clone(opts.repo, opts.branch, dest)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"caldera gitsync: cannot clone {opts.repo}{at_branch} into {dest}: {e}", file=sys.stderr, flush=True)
        return 1
    print(f"caldera gitsync: cloned {opts.repo}{at_branch} into {dest.resolve()}", flush=True)
    try:
        os.execvp(command[0], command)  # returns only by raising
    except OSError as e:
        print(f"caldera gitsync: cannot run {command[0]!r}: {e.strerror}", file=sys.stderr, flush=True)
    return 127


if __name__ == "__main__":
    sys.exit(main())
