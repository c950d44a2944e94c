"""Matplotlib rendering of one figure (PNG and SVG) from its computed points."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from . import compute as C
from .spec import TITLES, Panel

_STYLE = {
    C.DEFAULT: dict(color="black", lw=2.4, ls="-", zorder=10),
    C.DEFAULT_RDP: dict(color="0.6", lw=1.4, ls=(0, (4, 2)), zorder=11),  # dashed over the default
    C.SCLONE_RDP: dict(color="tab:red", lw=1.4, ls="--", zorder=8),
    C.SCLONE_PLD: dict(color="0.45", lw=1.6, ls=":", zorder=8),
    C.U1: dict(color="tab:blue", lw=1.6, ls="-"),
    C.U2: dict(color="tab:cyan", lw=1.3, ls="-"),
    C.LOWER: dict(color="tab:green", lw=1.3, ls=":"),
    C.EFM_RDP: dict(color="tab:red", lw=1.3, ls="-."),
    C.EFM_DP: dict(color="tab:pink", lw=1.3, ls="-."),
    C.BBG: dict(color="tab:brown", lw=1.3, ls="--"),
    C.CLONE: dict(color="tab:purple", lw=1.6, ls="--"),
    C.KOV: dict(color="tab:purple", lw=1.6, ls="--"),
    C.KOV_CF: dict(color="tab:olive", lw=1.3, ls="--"),
    C.DRV: dict(color="tab:orange", lw=1.3, ls="--"),
    C.PLD: dict(color="0.45", lw=1.6, ls=":"),
    C.SU: dict(color="tab:blue", lw=1.6, ls="-"),
    C.SLOWER: dict(color="tab:green", lw=1.3, ls=":"),
    C.GDD_WBK: dict(color="tab:orange", lw=1.6, ls="-."),
    C.KOV_SUB: dict(color="tab:purple", lw=1.6, ls="--"),
    C.KOV_SUB_CF: dict(color="tab:olive", lw=1.3, ls="--"),
}
_XLABEL = {
    "alpha": "Rényi order α",
    "n": "number of clients n",
    "epsilon0": "LDP parameter ε0",
    "T": "rounds T",
}
_YLABEL = {
    "rdp": "RDP ε(α)",
    "single": "ε at δ = 10⁻⁶",
    "composed": "ε at δ = 10⁻⁸",
    "subsampled": "ε at δ = 10⁻⁸",
}
_LAYOUT = {"5.2": (2, 3), "5.3": (2, 2), "5.4": (2, 3), "5.6": (1, 3)}


def render(fig_id: str, panels: list[Panel], data: dict, out: Path) -> list[Path]:
    """Draw ``data[(panel, curve)] = [(x, y), …]`` as ``out/fig<id>.png`` and ``.svg``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = (
        "privacy-accountant"  # stable element ids: regenerated SVGs diff cleanly
    )

    rows, cols = _LAYOUT[fig_id]
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows + 0.9), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, p in zip(axes.ravel(), panels):
        _draw_panel(ax, p, data, handles)
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    fig.suptitle(TITLES[fig_id])
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=min(4, len(handles)),
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.08 if rows > 1 else 0.14, 1, 0.97))
    paths = []
    stem = "fig" + fig_id.replace(".", "_")
    for ext in ("png", "svg"):
        path = out / f"{stem}.{ext}"
        fig.savefig(path, dpi=110, metadata={"Date": None} if ext == "svg" else None)
        paths.append(path)
    plt.close(fig)
    return paths


def _draw_panel(ax: Any, p: Panel, data: dict, handles: dict[str, Any]) -> None:
    """One panel's curves (positive finite points only, log axes); the first line of each curve
    goes into ``handles`` for the figure's legend."""
    for curve in C.CURVES[p.kind]:
        pts = [
            (x, y) for x, y in data.get((p.panel, curve), []) if y is not None and math.isfinite(y) and y > 0
        ]
        if not pts:
            continue
        xs, ys = zip(*pts)
        (h,) = ax.plot(xs, ys, label=curve, marker="." if len(xs) < 8 else None, **_STYLE.get(curve, {}))
        handles.setdefault(curve, h)
    if p.x in ("alpha", "n", "T"):
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(_XLABEL[p.x])
    ax.set_ylabel(_YLABEL[p.kind])
    ax.set_title(f"({p.panel}) {p.caption}", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
