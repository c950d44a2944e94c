"""Approximate-DP baselines the thesis compares against (numpy/scipy only).

Each function is one source, cited in its docstring with its validity conditions:

* :mod:`.clone_dp` — the FMT21 clone pair's exact (ε, δ) for one shuffle (certified), and FMT21's
  closed-form bound;
* :mod:`.blanket` — BBG19 privacy blanket and EFM19 amplification by shuffling, (ε, δ);
* :mod:`.composition` — KOV15 optimal and DRV10 advanced composition of (ε, δ) mechanisms;
* :mod:`.subsampling` — (ε, δ) under sampling without replacement (BBG18);
* :mod:`.pld` — privacy-loss distribution of the clone pair (needs ``dp_accounting``, extra ``[pld]``).

These are comparison baselines: the service's own accounting is :mod:`accountant`'s RDP.
"""

from .clone_dp import ClonePair, clone_delta, clone_epsilon, clone_pair, fmt21_closed_form_epsilon

__all__ = ["ClonePair", "clone_delta", "clone_epsilon", "clone_pair", "fmt21_closed_form_epsilon"]
