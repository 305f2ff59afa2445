"""``python -m helpers.train``: see :mod:`helpers.train.cli`."""

import sys

from helpers.train.cli import main

sys.exit(main())
