"""A fresh RSA key pair for the `ssh` plugin's Secret, made by `ssh-keygen` (Volcano makes one per job too)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from caldera.core.errors import CalderaError


def new_key_pair(comment: str) -> tuple[str, str]:
    """(private key in OpenSSH PEM, public key line)."""
    with tempfile.TemporaryDirectory(prefix="caldera-ssh-") as tmp:
        key = Path(tmp) / "id_rsa"
        try:
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-C", comment, "-f", str(key)],
                check=True,
                capture_output=True,
                timeout=60,
            )
        except (OSError, subprocess.SubprocessError) as e:
            raise CalderaError(f"the ssh plugin needs ssh-keygen to make a key pair: {e}") from None
        return key.read_text(), key.with_suffix(".pub").read_text()
