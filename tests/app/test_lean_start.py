"""The service starts lean: building the app (as ``serve`` does) imports none of scipy.optimize,
scipy.stats (≈ 50 MB and ≈ 1 s together) and scipy.special (≈ 26 MB) — only computations need
them, and they load on first use — nor the optional compiled kernels."""

import subprocess
import sys

CHECK = """
import sys
from app.core.config import Settings
from app.main import create_app
create_app(Settings())
heavy = [m for m in ("scipy.optimize", "scipy.stats", "scipy.special", "numba", "alembic") if m in sys.modules]
print(",".join(heavy))
"""


def test_building_the_app_loads_no_heavy_module():
    r = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "", f"imported at start: {r.stdout.strip()}"


def test_the_lazy_modules_still_work_when_used():
    code = (
        "import sys, accountant\n"
        "from accountant.baselines import clone_epsilon\n"
        "assert 'scipy.stats' not in sys.modules\n"
        "e = clone_epsilon(1000, 1.0, 1e-6)\n"
        "assert 'scipy.stats' in sys.modules and 0 < e < 1.0, e\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
