"""``python -m helpers.train``: see :mod:`helpers.train.cli`."""

import sys

from helpers.train.cli import main
from helpers.train.signals import ignore_stop_signals

# main() installs its own handlers at once and puts these back when it returns: the exiting command then
# ignores a late Ctrl-C or SIGTERM, which would otherwise turn a clean end into a kill or a traceback.
ignore_stop_signals()
sys.exit(main())
