"""The compiled histogram build of :mod:`accountant.clones.compiled` (imported only when numba is
installed): every cell of every point — its weight and g — binned on |g| and reduced per bin key
to the statistics of :class:`accountant.clones.histogram.bins.Bins` (mass, mass·g, right-end mass,
extreme values of g).

Cell x of a point with m = c + 1 coins, v = (2x − m)/m, z = s·v: weight e^{lw}·b_m(x)·(1 − z),
g = log((1 + z)/(1 − z)) (:mod:`accountant.clones.grid.cells`). The caller cuts each window into
blocks of at most :data:`BLOCK` cells and gives Loader's log-pmf at each block's first cell x0;
:func:`_block` cuts a block into segments (:func:`_segment`).

* **Weights.** Within a block b_m(x) = b_m(x0)·r, r the product of the exact ratios
  (m − y)/(y + 1) (numerator and denominator exact integers): one rounded division and one
  rounded product per cell, so after k ≤ BLOCK − 1 steps r carries a relative error
  ≤ 2k·2⁻⁵³ ≤ 5.7e-14 (the numpy path sums the logs of the same ratios over blocks of 32: an
  absolute error of ≲ 32 ulps of the partial sums, the same order). At each segment's start r
  is brought into [½, 1) by frexp, the power of two moving into the block's scale exponent
  (exact); segments are cut (:func:`_r_span`) so that r stays in [2⁻⁵⁹¹, 2⁶⁰] and r is checked
  to lie in [2⁻⁶⁰⁰, 2⁶⁴]: a cell's weight r·(1 − z) is a normal number, ≥ 2⁻⁶⁰⁰·(1 − z).
* **Scales.** e^{la} = fr·2^{ex} (:func:`_split`, la = the block's log-weight). A key's sums are
  kept relative to 2^{its scale}, the largest ex of its runs (:func:`_flush`: two look-ups in a
  table of powers of two instead of an exp). The run that set the scale weighs ≥
  2⁻⁶⁰⁰·(1 − z)·2^{scale}; what underflows (a run, or the old sums when the scale grows) is below
  2⁻¹⁰⁷⁴·2^{scale}: below 2⁻⁴⁷⁴/(1 − z) of the same bin's own mass, and 1 − z ≥ 1 − s ≥ e^{−ε0}
  (x ≤ m), so below 2⁻⁴³⁰ of it for ε0 ≤ 30 — underflow relative to the bin's own mass, as in
  the numpy path (which drops cells below 2⁻¹⁰⁷⁴ of the bin's largest). The right-end sums
  (weights × e^{shift_j}, shift clipped to ±700 as there) have their own scale per key.
* **g and 1 − z** per segment from one log at its expansion cell (:func:`_g_at`: the exact
  identity g(xc + k) = g_c + 2·artanh(u) and its series, to ≲ 12 ulps of g; 1 − z =
  (1 − z_c) − k·h, to ≲ 5 ulps), in a vectorised pass (:func:`_series_pass`).
* **Bins.** Each cell's bin is the analytic index of :func:`accountant.clones.histogram.bins._bin_keys`
  checked against the edges themselves (:func:`_index_pass`, :func:`_sum_pass`; moved by
  :func:`_bin_of` where they disagree): the numpy path's assignment of the same value. g is
  monotone in x, so within a segment the cells of one bin are consecutive and their sums run
  without a branch (:func:`_sum_pass`); one-cell segments and the rare segments that fail a
  check go cell by cell (:func:`_slow_seg`).

So the histogram is the numpy path's up to the cells' g (≲ 12 ulps apart: a cell on a bin edge
may land in the neighbouring bin; either histogram is valid) and to the rounding of the sums.
"""

from __future__ import annotations

import math

import numpy as np

from ..types import Array
from .histogram_sum import _jit, _jit_inline

#: Cells per block (one Loader anchor each, computed by the caller).
BLOCK = 256
#: ln 2 = LN2_HI + LN2_LO: LN2_HI with 24 significant bits (ex·LN2_HI is exact for |ex| < 2²⁹),
#: LN2_LO the rest (their sum is ln 2 to 1e-23 relative).
LN2_HI = 0.6931471228599548
LN2_LO = 5.7699990475432854e-08
#: The scale exponent of a key no run has reached yet (differences to it overflow no int64).
NO_SCALE = -(2.0**62)
_INV_LN2 = 1.0 / math.log(2.0)
_T_MAX = 0.125  # |k|·max(a, b) over a segment (:func:`_g_at`)
_R_LO = 2.0**-600  # the range of the ratio product r (module docstring)
_R_HI = 2.0**64
_TOP_SLACK = 1.0 + 2.0**-40  # (:func:`_bin_of`)
_P2 = np.array([math.ldexp(1.0, -i) for i in range(1100)])  # 2^−i (0 from i = 1075 on)
_P2_LAST = _P2.size - 1
#: Per-segment buffers: g, 1 − z, the ratio to the next cell, the bin.
Bufs = tuple[Array, Array, Array, Array]


@_jit_inline
def _two_artanh(u: float) -> float:
    """2·artanh(u) = 2·Σ_{n ≤ 8} u^{2n+1}/(2n+1) for |u| ≤ 1/8: the remainder
    2·Σ_{n≥9} |u|^{2n+1}/(2n+1) ≤ 2|u|^{19}/(19(1 − u²)) is at most 3e-18 relative to 2|u|
    (:func:`_g_at`); Horner in u², one rounding per step."""
    u2 = u * u
    p = 1.0 / 15.0 + u2 * (1.0 / 17.0)
    p = 1.0 / 13.0 + u2 * p
    p = 1.0 / 11.0 + u2 * p
    p = 1.0 / 9.0 + u2 * p
    p = 1.0 / 7.0 + u2 * p
    p = 1.0 / 5.0 + u2 * p
    p = 1.0 / 3.0 + u2 * p
    return 2.0 * u + 2.0 * u * (u2 * p)


@_jit_inline
def _sides_g(x: float, m: float, s: float, w: float) -> tuple[float, float, float]:
    """(1 + z, 1 − z, g) of cell x: for |z| > ½ as (1 ± v) ∓ v·w (w = 1 − s, no cancellation
    when s rounds to 1) and g = log of their ratio; else 1 ± z and g = log1p(2z/(1 − z)), or for
    |z| ≤ 1/64 g = 2·artanh(z) by :func:`_two_artanh` (its remainder is below 2⁻²⁰⁰ relative
    there): the numpy path's values to rounding, without a log."""
    v = 2.0 * x
    v -= m
    v /= m
    sv = s * v
    ep = 1.0 + sv
    d = 1.0 - sv
    if abs(sv) <= 0.015625:
        return ep, d, _two_artanh(sv)
    if abs(sv) > 0.5:
        d = 2.0 * (m - x) / m + v * w
        ep = 2.0 * x / m - v * w
        return ep, d, math.log(ep / d)
    return ep, d, math.log1p(2.0 * sv / d)


@_jit
def _cell(x: float, m: float, s: float, w: float) -> tuple[float, float]:
    """(1 − z, g) of cell x (:func:`_sides_g`)."""
    _, d, g = _sides_g(x, m, s, w)
    return d, g


@_jit
def g_range(c: Array, x_l: Array, x_h: Array, lwp: Array, s: float, w: float) -> tuple[float, float]:
    """min and max of |g| over the valid cells: g is increasing in x and 0 only at x = m/2, so
    they are at the cells next to m/2 and at the window ends."""
    gmin = math.inf
    gmax = 0.0
    for j in range(c.size):
        if not (lwp[j] > -math.inf and lwp[j] < math.inf):
            continue
        m = c[j] + 1.0
        lo = float(x_l[j])
        hi = float(x_h[j])
        for x in (lo, hi, math.ceil(m / 2.0) - 1.0, math.floor(m / 2.0) + 1.0):
            if x < lo or x > hi:
                continue
            d, gg = _cell(x, m, s, w)
            if gg != 0.0 and d > 0.0:
                a = abs(gg)
                gmin = min(gmin, a)
                gmax = max(gmax, a)
    return gmin, gmax


@_jit
def _bin_of(
    a: float, prev: int, ed: Array, top: float, ksw: int, dg: float, gmin: float, log_r: float
) -> int:
    """The bin (ed[i], ed[i+1]] holding |g| = a (accountant.clones.histogram.bins._bin_keys): the
    analytic index (uniform part above ``top``, geometric below it; or the previous cell's bin,
    ``prev`` ≥ 0), then moved to the bin that holds a. The top edge is the largest |g| of the
    window ends by :func:`_cell`; this kernel's value of such a cell (:func:`_g_at`) may exceed
    it by rounding: a value above it by at most 2⁻⁴⁰ relative joins the last bin (whose
    statistics are its cells' own extremes). −1 if no bin holds a (never expected)."""
    nb = ed.size - 1
    if not (a > 0.0 and a <= ed[nb] * _TOP_SLACK):
        return -1
    if prev >= 0:
        idx = min(prev, nb - 1)
    elif a > top:
        idx = int(min(max(math.ceil((a - top) / dg) + (ksw - 1.0), 0.0), nb - 1.0))
    else:
        idx = int(min(max(math.ceil(math.log(a / gmin) / log_r), 0.0), nb - 1.0))
    while idx > 0 and a <= ed[idx]:
        idx -= 1
    while idx < nb - 1 and a > ed[idx + 1]:
        idx += 1
    if not (a > ed[idx] and (a <= ed[idx + 1] or idx == nb - 1)):
        return -1
    return idx


@_jit_inline
def _split(la: float) -> tuple[int, float]:
    """e^{la} = fr·2^{ex}: ex = ⌊la/ln 2⌋ and fr = e^{(la − ex·LN2_HI) − ex·LN2_LO} ∈ [1, 2]
    (ex·LN2_HI exact for |ex| < 2²⁹; the difference to la, below 1 + |ex|·LN2_LO, is exact by
    Sterbenz for |la| ≥ 2 and otherwise within 2⁻⁵¹ of it): e^{la} to a few ulps."""
    e = math.floor(la * _INV_LN2)
    return int(e), math.exp((la - e * LN2_HI) - e * LN2_LO)


@_jit_inline
def _rescale(tab: Array, k: int, col: int, ex: int, fr: float) -> tuple[float, float]:
    """The key's scale exponent in ``tab[k, col]`` raised to max(its value, ex) (stored), and the
    factors that bring the key's old sums (fo) and a new run's sums of scale fr·2^{ex} (fn) to it:
    exact powers of two from the table (0 beyond 2⁻¹⁰⁷⁴), fn times fr."""
    mk = int(tab[k, col])
    nw = max(mk, ex)
    tab[k, col] = nw
    return _P2[min(nw - mk, _P2_LAST)], fr * _P2[min(nw - ex, _P2_LAST)]


@_jit_inline
def _flush(
    k: int, ex: int, fr: float, exl: int, frl: float, sm: float, sg: float, lo: float, hi: float, tab: Array
) -> None:
    """Adds one run of cells of key k — Σ weight = fr·2^{ex}·sm, Σ weight·g = fr·2^{ex}·sg, the
    right-end mass frl·2^{exl}·sm, extreme values lo, hi of g — to the key's row of ``tab``
    (scale exponent, Σ weight, Σ weight·g, right-end scale exponent, right-end Σ, min g, max g):
    each sum relative to 2^{its scale}, the largest exponent of the key's runs so far (the sums
    are rescaled by powers of two when it grows; 2^{−i} from a table, 0 beyond 2⁻¹⁰⁷⁴). Nothing
    for k < 0 (cells set aside) or an empty run."""
    if k < 0 or not sm > 0.0:
        return
    fo, fn = _rescale(tab, k, 0, ex, fr)
    tab[k, 1] = tab[k, 1] * fo + sm * fn
    tab[k, 2] = tab[k, 2] * fo + sg * fn
    fo, fn = _rescale(tab, k, 3, exl, frl)
    tab[k, 4] = tab[k, 4] * fo + sm * fn
    tab[k, 5] = min(tab[k, 5], lo)
    tab[k, 6] = max(tab[k, 6], hi)


@_jit_inline
def _segment(x: float, x_end: float, m: float, s: float, w: float, h: float) -> tuple[float, float]:
    """The next segment [x, xe] of cells (xe ≤ x_end) and its expansion cell xc. Its cells have
    one sign of g (2x < m; 2x = m alone; 2x > m) and are at most 1 + ⌊T/t⌋ (T = 1/8,
    t = h/min(1 + z, 1 − z) at x), and no more than :func:`_r_span` allows. The expansion cell
    is the one of smallest |g|: x where g > 0, xe where g < 0 (so g_c and the series of
    :func:`_g_at` share their sign). Over the segment |k|·max(a, b) ≤ T, a = h/(1 + z_c),
    b = h/(1 − z_c): where g > 0, xc = x and max(a, b) = t; where g < 0, b ≤ h ≤ a, and
    a = h/(1 + z_c) ≤ h/(1 + z) = t as z_c ≥ z."""
    twice = 2.0 * x - m
    if twice == 0.0:
        return x, x
    part = x_end if twice > 0.0 else min(x_end, math.ceil(m / 2.0) - 1.0)
    v = twice / m
    sv = s * v
    far = abs(sv) > 0.5  # (1 ± z as in :func:`_sides_g`)
    ep = 2.0 * x / m - v * w if far else 1.0 + sv
    em = 2.0 * (m - x) / m + v * w if far else 1.0 - sv
    t = h / min(ep, em)
    xe = min(part, x + math.floor(_T_MAX / t)) if t > 0.0 else part
    xe = x + _r_span(x, xe - x, m)
    return xe, (x if twice > 0.0 else xe)


@_jit_inline
def _r_span(x: float, span: float, m: float) -> float:
    """span, shortened so that the ratio product r over cells x … x + span (from r ∈ [½, 1))
    stays in [2⁻⁵⁹¹, 2⁶⁰]: the ratios (m − y)/(y + 1) decrease in y, so r ≥ ½·ρ_lo^span with
    ρ_lo the ratio at x + span − 1 and r ≤ ρ_hi^span with ρ_hi the one at x (|log₂ ρ| ≤
    (1/ρ − 1)/ln 2 for ρ < 1 and ≤ (ρ − 1)/ln 2 above: the logs only when these bounds do not
    suffice). :func:`_sum_pass` checks r anyway."""
    if span < 1.0:
        return span
    lo = (m - (x + span) + 1.0) / (x + span)
    if span * (1.0 / lo - 1.0) * _INV_LN2 > 590.0:
        span = min(span, math.floor(590.0 / -math.log2(lo)))
    hi = (m - x) / (x + 1.0)
    if span * (hi - 1.0) * _INV_LN2 > 60.0:
        span = min(span, math.floor(60.0 / math.log2(hi)))
    return max(span, 1.0)


@_jit_inline
def _g_at(kf: float, g_c: float, apb: float, amb: float) -> float:
    """g(xc + k) = g_c + 2·artanh(u), u = k(a + b)/(2 + k(a − b)) (apb = a + b, amb = a − b),
    by the series 2·Σ_{n ≤ 8} u^{2n+1}/(2n+1).

    With z = z_c + k·h linear in the cell (h = 2s/m), 1 + z = (1 + z_c)(1 + k·a) and 1 − z =
    (1 − z_c)(1 − k·b) for a = h/(1 + z_c), b = h/(1 − z_c), so exactly
    g(xc + k) = g_c + log((1 + ka)/(1 − kb)) = g_c + 2·artanh(u).

    Truncation. Let τ = |k|·max(a, b) ≤ 1/8 (:func:`_segment`) and, for k > 0, α = ka, β = kb:
    u = (α + β)/(2 + α − β) ≤ max(α, β) (for β ≥ α this is α(1 − β) ≤ β(1 − β); for α > β,
    β(1 + α) ≤ α(1 + α)); for k < 0 the same with a and b exchanged. So |u| ≤ τ, and the
    series' remainder 2·Σ_{n≥9} |u|^{2n+1}/(2n+1) ≤ 2|u|^{19}/(19(1 − u²)) is at most
    τ^{18}/(19(1 − τ²)) ≤ 3e-18 relative to 2·artanh(|u|) ≥ 2|u| — a thirtieth of a double's
    rounding.

    Rounding. a and b carry ≲ 5 ulps (h, 1 ± z_c, the division), a + b ≲ 6, a − b an absolute
    ≲ 6 ulps of max(a, b); so k(a + b) is within ≲ 7 ulps and 2 + k(a − b) ∈ [15/8, 17/8] within
    ≲ 2: u within ≲ 10 ulps; the series adds ≲ 1 (u²·p ≤ 1/190, its own errors are scaled by
    that): 2·artanh(u) within ≲ 11 ulps. g_c (≲ 3 ulps, :func:`_sides_g`) and the series share
    their sign (k ≥ 0 with g_c > 0, k ≤ 0 with g_c < 0), so their sum adds one rounding and no
    cancellation: g within ≲ 12 ulps relative (the numpy path's log1p: ≲ 3; the tests check 16
    against mpmath). A one-cell segment has apb = amb = 0: g = g_c exactly."""
    return g_c + _two_artanh(kf * apb / (2.0 + kf * amb))


@_jit
def _flush_pending(
    span: tuple[int, int, int],
    sgn: int,
    sc: tuple[int, float, int, float],
    pend: Array,
    tab: Array,
    keep: bool,
) -> None:
    """The runs of a fast segment (:func:`_sum_pass`; span = (lowest bin, highest bin, base) of
    sign sgn, bin i in row i − base of ``pend``: Σ weight, Σ weight·g, min g, max g) into their
    keys (unless not ``keep``: the segment is redone), and those rows cleared."""
    ex, fr, exl, frl = sc
    i0, i1, base = span
    for i in range(i0, i1 + 1):
        if keep:
            _flush(
                2 * i + sgn,
                ex,
                fr,
                exl,
                frl,
                pend[i - base, 0],
                pend[i - base, 1],
                pend[i - base, 2],
                pend[i - base, 3],
                tab,
            )
        pend[i - base, 0] = 0.0
        pend[i - base, 1] = 0.0
        pend[i - base, 2] = math.inf
        pend[i - base, 3] = -math.inf


@_jit_inline
def _new_bin(
    gg: float, d: float, prev: int, ed: Array, top: float, ksw: int, dg: float, gmin: float, log_r: float
) -> tuple[int, int, float, float]:
    """(key, bin, lower edge, upper edge) of a cell that starts a run: key −1 (and an empty bin)
    for a cell set aside (g = 0 or 1 − z ≤ 0), −3 if no bin holds it (never expected)."""
    if not (gg != 0.0 and d > 0.0):
        return -1, prev, math.inf, -math.inf
    idx = _bin_of(abs(gg), prev, ed, top, ksw, dg, gmin, log_r)
    if idx < 0:
        return -3, prev, math.inf, -math.inf
    return 2 * idx + (gg < 0.0), idx, ed[idx], ed[idx + 1]


@_jit
def _series_pass(
    x: float, n: int, cell: tuple[float, float, float, float, float, float], m: float, buf: Bufs
) -> None:
    """Per cell x + q of a segment (cell = (xc, g_c, 1 − z_c, h, a + b, a − b)): g (:func:`_g_at`),
    1 − z = (1 − z_c) − k·h (:func:`_block`) and the ratio b_m(x + 1)/b_m(x) = (m − x)/(x + 1)
    into the buffers (no branch: the loop is vectorised)."""
    xc, g_c, d_c, h, apb, amb = cell
    gb, db, rb, _ = buf
    for q in range(n):
        xx = x + q
        kf = xx - xc
        gb[q] = _g_at(kf, g_c, apb, amb)
        db[q] = d_c - kf * h
        rb[q] = (m - xx) / (xx + 1.0)


@_jit
def _index_pass(n: int, ed: Array, lay: tuple[int, float, float, float], buf: Bufs) -> None:
    """Per cell of a segment: the analytic bin index of |g| (:func:`accountant.clones.histogram.
    _bin_keys`: ⌈(|g| − ed[ksw])/dg⌉ + ksw − 1 in the uniform part, ⌈log(|g|/gmin)/log R⌉ in the
    geometric part) clamped to the bins (nan → 0: no undefined conversion); :func:`_sum_pass`
    checks it against the edges. Without a branch (vectorised) when every |g| of the segment is
    in the uniform part (|g| is monotone over it: its ends suffice)."""
    gb, _, _, ib = buf
    ksw, dg, gmin, log_r = lay
    top = ed[ksw]
    inv_dg = 1.0 / dg
    off = ksw - 1.0
    lim = ed.size - 2.0
    if abs(gb[0]) > top and abs(gb[n - 1]) > top:
        for q in range(n):
            t = math.ceil((abs(gb[q]) - top) * inv_dg) + off
            t = t if t > 0.0 else 0.0
            t = t if t < lim else lim
            ib[q] = int(t)
        return
    for q in range(n):
        ag = abs(gb[q])
        t = math.ceil((ag - top) * inv_dg) + off if ag > top else math.ceil(math.log(ag / gmin) / log_r)
        t = t if t > 0.0 else 0.0
        t = t if t < lim else lim
        ib[q] = int(t)


@_jit
def _sum_pass(
    n: int, r: float, ed: Array, lay: tuple[int, float, float, float], buf: Bufs, pend: Array
) -> tuple[float, tuple[int, int, int], int]:
    """The cells of a segment (buffers of :func:`_series_pass`, :func:`_index_pass`) into rows of
    ``pend`` (per bin: Σ weight, Σ weight·g, min g, max g; bin i in row i − base, base two below
    the lowest analytic index of the segment, so the rows stay few and hot): weight r·(1 − z), r
    the running ratio product (from r at the segment's start). Each cell's analytic bin is
    checked against the edges (ed[i] < |g| ≤ ed[i+1]) and moved by :func:`_bin_of` where it is
    off. The bins are monotone in the cell (|g| is, on a segment of one sign), so the cells of
    one bin are consecutive: the sums restart at each new bin and the bin's row is written after
    every cell, its last write holding its sums — no branch on the runs. Monotonicity is checked
    (increases and decreases counted), and r ∈ [2⁻⁶⁰⁰, 2⁶⁴]. Returns (r after the segment,
    (lowest bin, highest bin, base), status): status 0; 1 if a check failed (the caller clears
    the rows and redoes the segment by :func:`_slow_seg`); −1 if a cell could not be placed in a
    bin (never expected)."""
    gb, db, rb, ib = buf
    ksw, dg, gmin, log_r = lay
    top = ed[ksw]
    ip = -1
    am = asg = 0.0
    lo = math.inf
    hi = -math.inf
    i0 = ed.size
    i1 = -1
    base = max(min(ib[0], ib[n - 1]) - 2, 0)
    up = 0
    down = 0
    rmin = math.inf
    rmax = 0.0
    for q in range(n):
        i = ib[q]
        gg = gb[q]
        if not (abs(gg) > ed[i] and abs(gg) <= ed[i + 1]):
            i = _bin_of(abs(gg), i, ed, top, ksw, dg, gmin, log_r)
            if i < base:
                return r, (i0, i1, base), -1 if i < 0 else 1
        wt = r * db[q]
        rmin = min(rmin, r)
        rmax = max(rmax, r)
        r *= rb[q]
        same = i == ip
        up += i > ip
        down += i < ip
        am = (am if same else 0.0) + wt
        asg = (asg if same else 0.0) + wt * gg
        lo = min(lo if same else math.inf, gg)
        hi = max(hi if same else -math.inf, gg)
        pend[i - base, 0] = am
        pend[i - base, 1] = asg
        pend[i - base, 2] = lo
        pend[i - base, 3] = hi
        ip = i
        i0 = min(i0, i)
        i1 = max(i1, i)
    ok = rmin >= _R_LO and rmax <= _R_HI and (up <= 1 or down == 0)
    return r, (i0, i1, base), 0 if ok else 1


@_jit
def _slow_seg(
    x: float,
    n: int,
    cell: tuple[float, float, float, float, float, float],
    r: float,
    m: float,
    ed: Array,
    lay: tuple[int, float, float, float],
    sc: tuple[int, float, int, float],
    tab: Array,
    prev: int,
) -> tuple[int, float, int]:
    """A segment cell by cell (one-cell segments: g = 0, 1 − z ≤ 0, or a segment that failed a
    check of :func:`_sum_pass`): g and 1 − z as there; a cell whose |g| is inside the current
    run's bin (ed[i], ed[i+1]] joins the run, the others get their key from :func:`_new_bin` and
    start one; each run goes to its key by :func:`_flush`. Stops where r leaves [2⁻⁶⁰⁰, 2⁶⁴]
    (the next segment starts there, with r renormalised). Returns (cells done, r, last bin),
    last bin −3 on failure."""
    xc, g_c, d_c, h, apb, amb = cell
    ex, fr, exl, frl = sc
    ksw, dg, gmin, log_r = lay
    top = ed[ksw]
    k_run = -1
    sm = sg = 0.0
    lo = elo = math.inf
    hi = ehi = -math.inf
    q = 0
    while q < n and r >= _R_LO and r <= _R_HI:
        xx = x + q
        kf = xx - xc
        gg = _g_at(kf, g_c, apb, amb)
        d = d_c - kf * h
        ag = abs(gg)
        if not (ag > elo and ag <= ehi):
            kk, prev, elo, ehi = _new_bin(gg, d, prev, ed, top, ksw, dg, gmin, log_r)
            if kk == -3:
                return q, r, -3
            if kk != k_run:
                _flush(k_run, ex, fr, exl, frl, sm, sg, lo, hi, tab)
                k_run = kk
                sm = sg = 0.0
                lo = math.inf
                hi = -math.inf
        wt = r * d
        sm += wt
        sg += wt * gg
        lo = min(lo, gg)
        hi = max(hi, gg)
        r *= (m - xx) / (xx + 1.0)
        q += 1
    _flush(k_run, ex, fr, exl, frl, sm, sg, lo, hi, tab)
    return q, r, prev


@_jit_inline
def _block(
    sc: tuple[int, float, int, float],
    m: float,
    x0: float,
    ln: int,
    s: float,
    w: float,
    ed: Array,
    lay: tuple[int, float, float, float],
    tab: Array,
    pend: Array,
    buf: Bufs,
    prev: int,
) -> int:
    """The cells x0 … x0 + ln − 1 of one block into ``tab`` (sc = (ex, fr, exl, frl): the
    scales of its first cell's weight and right-end weight, :func:`_split`), segment by segment
    (:func:`_segment`): at each segment's start r → [½, 1) by frexp and the scales' exponents
    take the power of two (exact); g_c and 1 ± z_c at the expansion cell (:func:`_sides_g`),
    a = h/(1 + z_c), b = h/(1 − z_c), h = 2s/m (zero for a one-cell segment); then the passes
    (:func:`_series_pass`, :func:`_index_pass`, :func:`_sum_pass`, :func:`_flush_pending`), or
    :func:`_slow_seg`.

    1 − z = (1 − z_c) − k·h exactly (z is linear in x). Rounded: 1 − z_c to ≲ 3 ulps, h to one;
    for k > 0, k·h ≤ (1 − z_c)·|k|·b ≤ (1 − z_c)/8 (:func:`_segment`), so the difference loses
    at most a factor 8/7 and 1 − z is within ≲ 5 ulps; for k < 0 it is a sum of positives.
    Returns the last bin (a hint for the point's next block), or −3 if a cell could not be
    placed in a bin (never expected)."""
    ex, fr, exl, frl = sc
    h = 2.0 * s / m
    r = 1.0
    x = x0
    x_end = x0 + (ln - 1.0)
    while x <= x_end and r > 0.0:  # (r = 0 only beyond x = m: cells of weight 0)
        r, e = math.frexp(r)
        ex += e
        exl += e
        xe, xc = _segment(x, x_end, m, s, w, h)
        ep, d_c, g_c = _sides_g(xc, m, s, w)
        n = int(xe - x) + 1
        a = h / ep if n > 1 else 0.0
        b = h / d_c if n > 1 else 0.0
        cell = (xc, g_c, d_c, h, a + b, a - b)
        st = 1
        if n > 1 and g_c != 0.0 and d_c > 0.0:
            _series_pass(x, n, cell, m, buf)
            _index_pass(n, ed, lay, buf)
            r1, span, st = _sum_pass(n, r, ed, lay, buf, pend)
            if st < 0:
                return -3
            _flush_pending(span, int(g_c < 0.0), (ex, fr, exl, frl), pend, tab, st == 0)
            q = n
            prev = span[1] if g_c > 0.0 else span[0]
            r = r1 if st == 0 else r
        if st != 0:
            q, r, prev = _slow_seg(x, n, cell, r, m, ed, lay, (ex, fr, exl, frl), tab, prev)
            if prev == -3 or q == 0:
                return -3
        x += q
    return prev


@_jit
def cells_stats(
    blk_seg: Array,
    blk_x0: Array,
    blk_anchor: Array,
    blk_len: Array,
    mf: Array,
    lwp: Array,
    shift: Array,
    s: float,
    w: float,
    ed: Array,
    lay: tuple[int, float, float, float],
    tab: Array,
) -> int:
    """Per bin key, into the rows of ``tab`` (filled in place; rows start as (NO_SCALE, 0, 0,
    NO_SCALE, 0, inf, −inf, ·)): the sums of the cells' weights e^{lw_j}·b_m(x)·(1 − z), of
    weight·g and of the right-end weights (×e^{shift_j}), each relative to 2^{its scale
    exponent}, and the extreme values of g (module docstring). Cells with lw = ±inf, g = 0 or
    1 − z ≤ 0 are set aside (and right-end weights of a non-finite log, nan included). Returns 0, or 1 if a cell could not be placed in a bin (never
    expected). lay = (ksw, dg, gmin, log r) of the bin edges ``ed``."""
    pend = np.zeros((ed.size - 1, 4))
    pend[:, 2] = math.inf
    pend[:, 3] = -math.inf
    buf = (np.empty(BLOCK), np.empty(BLOCK), np.empty(BLOCK), np.empty(BLOCK, dtype=np.int64))
    prev = -1
    for b in range(blk_seg.size):
        if blk_len[b] > BLOCK:  # (the buffers hold one block)
            return 1
        j = blk_seg[b]
        if b == 0 or blk_seg[b - 1] != j:
            prev = -1
        la = blk_anchor[b] + lwp[j]
        if not (la > -math.inf and la < math.inf):
            prev = -1
            continue
        ex, fr = _split(la)
        lal = la + shift[j]
        exl, frl = _split(lal) if (lal > -math.inf and lal < math.inf) else (-(2**61), 0.0)
        prev = _block((ex, fr, exl, frl), mf[j], blk_x0[b], blk_len[b], s, w, ed, lay, tab, pend, buf, prev)
        if prev == -3:
            return 1
    return 0
