"""The compiled histogram build of :mod:`accountant.clones.fused` (imported only when numba is
installed): every cell of every point, its weight and g, binned on |g| and reduced per bin key.

Cell x of a point with m = c + 1 coins, v = (2x − m)/m, z = s·v: weight b_m(x)·(1 − z),
g = log((1 + z)/(1 − z)) (:mod:`accountant.clones._cells`). Per block of at most
:data:`BLOCK` cells (from x0, log-weight la of its first cell = Loader's log-pmf at x0 plus the
point's log-weight, from the caller):

* **weights** b_m(x)/b_m(x0) = r, the product of the exact ratios (m − x + 1)/x (numerator and
  denominator exact integers): one rounded division and one rounded product per cell, so after
  k ≤ BLOCK − 1 steps r carries a relative error ≤ 2k·2⁻⁵³ ≤ 5.7e-14 (the numpy path sums the
  logs of the same ratios over blocks of 32: an absolute error ≲ 32 ulps of the partial sums,
  the same order). r is kept in [2⁻²⁰⁰, 2⁶⁴] by exact power-of-two renormalisation (frexp; the
  block's scale exponent takes the power), so no ratio product under- or overflows however
  steep the pmf is inside a block.
* **scales** e^{la} = fr·2^{ex} (:func:`_split`): every sum is kept relative to a power of two
  per bin key (the largest ex of its runs), so joining a run to a key costs two table look-ups
  instead of an exp. A run whose mass relative to its key's scale is below 2⁻¹⁰⁷⁴ underflows:
  the key's largest run weighs ≥ 2⁻²⁰¹·(1 − z) of that scale, so only mass below 2⁻⁸⁰⁰ of the
  same bin's own mass can be lost (as in the numpy path: cells whose weight relative to the
  bin's largest underflows). The right-end sums (weights ×e^{shift}) keep their own
  power-of-two scale per key, so they neither overflow nor underflow where the left ones do
  not.
* **g and 1 − z** by segments (:func:`_segment`, :func:`_coefs`): see :func:`_coefs` for the
  series in the in-segment offset and its error bound; one log per segment (≈ 1/(128·h) cells,
  h = 2s/m) instead of one per cell.
* **bins**: g is monotone in x, so consecutive cells share a bin key in runs; a cell whose |g|
  is inside the current run's bin (ed[i], ed[i+1]] joins it with two comparisons; the others
  get their bin from :func:`_bin_of` (the previous bin, corrected against the edges themselves:
  the numpy path's assignment of the same value) and start a run. A run is added to its key by
  :func:`_flush`.
"""

from __future__ import annotations

import math

import numpy as np

from .fused_kernels import _jit, _jit_inline
from .kernels import Array

#: Cells per block (one Loader anchor each, computed by the caller).
BLOCK = 256
#: ln 2 = _LN2_HI + _LN2_LO, _LN2_HI with 24 significant bits (ex·_LN2_HI is exact for
#: |ex| < 2²⁹) and _LN2_LO the rest to 4e-24 relative.
LN2_HI = 0.6931471228599548
LN2_LO = 5.7699990475432854e-08
#: The scale of a key no run has reached yet (ex − _NO_SCALE overflows no int64).
NO_SCALE = -(2.0**62)
_INV_LN2 = 1.0 / math.log(2.0)
_T_MAX = 1.0 / 128.0  # |k|·max(a, b) ≤ this over a segment (:func:`_coefs`)
_R_LO = 2.0**-200
_R_HI = 2.0**64
_P2 = np.array([math.ldexp(1.0, -i) for i in range(1100)])  # 2^−i (0 from i = 1075 on)
_P2_LAST = _P2.size - 1


@_jit_inline
def _sides_g(x: float, m: float, s: float, w: float) -> tuple[float, float, float]:
    """(1 + z, 1 − z, g) of cell x: for |z| > ½ as (1 ± v) ∓ v·w (w = 1 − s, no cancellation
    when s rounds to 1) and g = log of their ratio; else 1 ± z and g = log1p(2z/(1 − z)), or for
    |z| ≤ 1/64 g = 2·artanh(z) = 2·Σ_k z^{2k+1}/(2k+1) to k = 6 (the rest is below 2⁻⁸⁴
    relative): the numpy path's values to rounding, without a log."""
    v = 2.0 * x
    v -= m
    v /= m
    sv = s * v
    ep = 1.0 + sv
    d = 1.0 - sv
    if abs(sv) <= 0.015625:
        z2 = sv * sv
        p = 1.0 / 11.0 + z2 / 13.0
        p = 1.0 / 9.0 + z2 * p
        p = 1.0 / 7.0 + z2 * p
        p = 1.0 / 5.0 + z2 * p
        p = 1.0 / 3.0 + z2 * p
        return ep, d, 2.0 * sv + 2.0 * sv * (z2 * p)
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


@_jit_inline
def _bin_of(
    a: float, prev: int, ed: Array, top: float, ksw: int, dg: float, gmin: float, log_r: float
) -> int:
    """The bin (ed[i], ed[i+1]] holding |g| = a (accountant.clones.histogram._bin_keys): the
    analytic index (uniform part above ``top``, geometric below it; or the previous cell's bin,
    ``prev`` ≥ 0), then moved to the bin that holds a. −1 if none does (never expected)."""
    nb = ed.size - 1
    if prev >= 0:
        idx = prev
    elif a > top:
        idx = int(min(max(math.ceil((a - top) / dg) + (ksw - 1.0), 0.0), nb - 1.0))
    else:
        idx = int(min(max(math.ceil(math.log(a / gmin) / log_r), 0.0), nb - 1.0))
    while idx > 0 and a <= ed[idx]:
        idx -= 1
    while idx < nb - 1 and a > ed[idx + 1]:
        idx += 1
    if not (a > ed[idx] and a <= ed[idx + 1]):
        return -1
    return idx


@_jit_inline
def _split(la: float) -> tuple[int, float]:
    """e^{la} = fr·2^{ex}: ex = ⌊la/ln 2⌋, fr = e^{(la − ex·LN2_HI) − ex·LN2_LO} ∈ [1, 2] (the
    first difference exact, Sterbenz, for |la| ≥ 2 and |ex| < 2²⁹; the rest rounds to an ulp
    of the value: e^{la} to rounding)."""
    e = math.floor(la * _INV_LN2)
    return int(e), math.exp((la - e * LN2_HI) - e * LN2_LO)


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
    mk = int(tab[k, 0])
    nw = max(mk, ex)
    fo = _P2[min(nw - mk, _P2_LAST)]
    fn = fr * _P2[min(nw - ex, _P2_LAST)]
    tab[k, 0] = nw
    tab[k, 1] = tab[k, 1] * fo + sm * fn
    tab[k, 2] = tab[k, 2] * fo + sg * fn
    ml = int(tab[k, 3])
    nl = max(ml, exl)
    fo = _P2[min(nl - ml, _P2_LAST)]
    fn = frl * _P2[min(nl - exl, _P2_LAST)]
    tab[k, 3] = nl
    tab[k, 4] = tab[k, 4] * fo + sm * fn
    tab[k, 5] = min(tab[k, 5], lo)
    tab[k, 6] = max(tab[k, 6], hi)


@_jit_inline
def _segment(x: float, x_end: float, m: float, s: float, w: float, h: float) -> tuple[float, float]:
    """The next segment [x, xe] of cells (xe ≤ x_end) and its expansion cell xc: cells of one
    sign of g only (2x < m, 2x = m alone, 2x > m), and at most 1 + ⌊(1/128)/t⌋ of them, t =
    h/min(1 + z, 1 − z) at x. The expansion cell is the one of smallest |g|: x for g > 0, xe for
    g < 0 (so g_c and the series have one sign: no cancellation, :func:`_coefs`). Over the
    segment, max(a, b) at xc ≤ t: a = h/(1 + z) and b = h/(1 − z) are at most t at x where g ≥ 0
    (xc = x), and where g < 0, b ≤ h ≤ a, and a decreases in x (xc ≥ x)."""
    twice = 2.0 * x - m
    if twice == 0.0:
        return x, x
    part = x_end if twice > 0.0 else min(x_end, math.ceil(m / 2.0) - 1.0)
    v = twice / m
    sv = s * v
    if abs(sv) > 0.5:
        lim = min(2.0 * x / m - v * w, 2.0 * (m - x) / m + v * w)
    else:
        lim = min(1.0 + sv, 1.0 - sv)
    t = h / lim
    xe = min(part, x + math.floor(_T_MAX / t)) if t > 0.0 else part
    return xe, (x if twice > 0.0 else xe)


@_jit_inline
def _coefs(
    a: float, b: float
) -> tuple[float, float, float, float, float, float, float, float]:
    """c_n = ((−1)^{n−1}·a^n + b^n)/n, n = 1 … 8: g(xc + k) = g_c + Σ_n c_n·k^n + R.

    With z = z_c + k·h linear in the cell (h = 2s/m), 1 ± z = (1 ± z_c)(1 ± k·a′) for
    a′ = a = h/(1 + z_c), b = h/(1 − z_c), so exactly g(xc + k) = g_c + log(1 + k·a) −
    log(1 − k·b), whose Taylor series in k is Σ c_n k^n. With τ = |k|·max(a, b) ≤ 1/128
    (:func:`_segment`) the remainder |R| ≤ Σ_{n≥9} 2τ^n/n ≤ 2τ⁹/(9(1 − τ)), and the sum
    itself has the sign of k and |Σ| ≥ |k|(a + b) − Σ_{n≥2} 2τ^n/n ≥ τ(1 − 2τ): |R| ≤ 2τ⁸/(9·(1 −
    τ)(1 − 2τ)) ≤ 4e-18 of |Σ| — a fortieth of a double's rounding. Rounding: term n, formed
    with a few roundings, is within ≈ 6·2⁻⁵³·τ^n·2/n of its value, so the evaluated sum is
    within ≈ 6·2⁻⁵³·τ/(1 − τ)/(τ(1 − 2τ)) ≤ 7 ulps of |Σ| (c_2 = (b² − a²)/2 may cancel, but
    its error is bounded by that of b², already counted); g_c and Σ share their sign (g_c ≥ 0
    and k ≥ 0, or g_c < 0 and k ≤ 0), so g_c + Σ adds no cancellation: g to ≈ 8 ulps, as the
    numpy path's log to a few. Likewise 1 − z = (1 − z_c) − k·h with k·h ≤ (1 − z_c)/128
    where k > 0 (and an addition of positives where k < 0): to 3 ulps. Coefficients of a
    one-cell segment are 0 (then g = g_c, 1 − z = 1 − z_c exactly)."""
    a2 = a * a
    b2 = b * b
    a3 = a2 * a
    b3 = b2 * b
    a4 = a2 * a2
    b4 = b2 * b2
    return (
        a + b,
        (b2 - a2) * 0.5,
        (a3 + b3) / 3.0,
        (b4 - a4) * 0.25,
        (a4 * a + b4 * b) / 5.0,
        (b4 * b2 - a4 * a2) / 6.0,
        (a4 * a3 + b4 * b3) / 7.0,
        (b4 * b4 - a4 * a4) * 0.125,
    )


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
    prev: int,
) -> int:
    """The cells x0 … x0 + ln − 1 of one block (scales sc = (ex, fr, exl, frl) of its first
    cell's weight and right-end weight, :func:`_split`) into ``tab`` (module docstring); the last
    bin (for the next block of the point), or −3 if a cell could not be placed in a bin."""
    ex, fr, exl, frl = sc
    ksw, dg, gmin, log_r = lay
    top = ed[ksw]
    h = 2.0 * s / m
    r = 1.0
    k_run = -1
    sm = sg = 0.0
    lo = math.inf
    hi = -math.inf
    x = x0
    x_end = x0 + (ln - 1.0)
    while x <= x_end:
        xe, xc = _segment(x, x_end, m, s, w, h)
        ep, d_c, g_c = _sides_g(xc, m, s, w)
        c1, c2, c3, c4, c5, c6, c7, c8 = _coefs(h / ep, h / d_c) if xe > x else (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        elo = math.inf  # a segment's first cell takes the bin test (its sign may be new)
        ehi = -math.inf
        for q in range(int(xe - x) + 1):
            xx = x + q
            kf = xx - xc
            if not (r >= _R_LO and r <= _R_HI):  # (exact rescaling by a power of two)
                _flush(k_run, ex, fr, exl, frl, sm, sg, lo, hi, tab)
                sm = sg = 0.0
                lo = math.inf
                hi = -math.inf
                r, e = math.frexp(r)
                ex += e
                exl += e
            k2 = kf * kf
            p = ((c1 + c2 * kf) + k2 * (c3 + c4 * kf)) + (k2 * k2) * ((c5 + c6 * kf) + k2 * (c7 + c8 * kf))
            gg = g_c + kf * p
            d = d_c - kf * h
            ag = abs(gg)
            if not (ag > elo and ag <= ehi):
                kk, prev, elo, ehi = _new_bin(gg, d, prev, ed, top, ksw, dg, gmin, log_r)
                if kk == -3:
                    return -3
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
        x = xe + 1.0
    _flush(k_run, ex, fr, exl, frl, sm, sg, lo, hi, tab)
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
    1 − z ≤ 0 are set aside. Returns 0, or 1 if a cell could not be placed in a bin (never
    expected). lay = (ksw, dg, gmin, log r) of the bin edges ``ed``."""
    prev = -1
    for b in range(blk_seg.size):
        j = blk_seg[b]
        if b == 0 or blk_seg[b - 1] != j:
            prev = -1
        la = blk_anchor[b] + lwp[j]
        if not (la > -math.inf and la < math.inf):
            prev = -1
            continue
        ex, fr = _split(la)
        exl, frl = _split(la + shift[j])
        prev = _block((ex, fr, exl, frl), mf[j], blk_x0[b], blk_len[b], s, w, ed, lay, tab, prev)
        if prev == -3:
            return 1
    return 0
