"""`python -m caldera.launcher [options] -- COMMAND...`: the same as `caldera launch`."""

import sys

from caldera.launcher.main import main

sys.exit(main())
