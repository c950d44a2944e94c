"""``python -m figures``: see :mod:`figures`."""

import sys

from figures import main

sys.exit(main(sys.argv[1:]))
