"""Suite-wide test settings.

Under CI (``CI`` set) hypothesis runs derandomized: the same examples on every run, so a red CI
is always reproducible. Locally it explores new examples on each run.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
