"""What every test shares: the embedded cluster checks, after each write, that its store holds what its plane has.

`CALDERA_VERIFY_STORE=1` makes the daemon compare each incremental write with a full pass
(`caldera.system.statestore`); daemons the tests start as processes inherit it.
"""

from __future__ import annotations

import os

os.environ.setdefault("CALDERA_VERIFY_STORE", "1")
