"""``python -m app.cli``: the same as the ``privacy-accountant`` command."""

import sys

from app.cli import main

sys.exit(main())
