"""Process tuning for the service (not for library users of ``accountant``).

The clone bound works on arrays of 10⁵–10⁶ cells; with glibc's defaults every such array is a
fresh ``mmap`` that is returned to the kernel when freed, so each new computation pays page
faults on all of its memory again (≈ 10 ms of a 30 ms answer). Raising the mmap threshold to
32 MiB (glibc's maximum) and the heap-trim threshold to 512 MiB keeps that memory in the heap for
the next computation. The cost is that the process keeps up to that much freed memory mapped.
Disable with ``ACCOUNTANT_MALLOC_TUNING=0``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_done = False


def tune_allocator(mmap_threshold: int = 32 << 20, trim_threshold: int = 512 << 20) -> bool:
    """Apply the glibc settings above once per process; False where there is no glibc."""
    global _done
    if _done:
        return True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold))
    if ok:
        _done = True
    else:
        logging.getLogger("accountant").info("allocator tuning not applied (not glibc)")
    return ok
