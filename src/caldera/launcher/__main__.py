"""`python -m caldera.launcher [options] -- COMMAND...`: the same as `caldera launch`."""

from caldera.launcher.main import main

main()  # ends the process with the launcher's exit code
