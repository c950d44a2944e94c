"""Local randomizers, their server-side estimators, and the accountant events they cost.

What a client sends and what the ledger charges are the same thing: every mechanism here exposes

- ``epsilon0`` — the exact ε0 of one whole report (pure ε0-LDP; for multi-message reports the sum of
  ``message_epsilons``, one per separately shuffled message);
- ``randomize(x, rng)`` — the client side, vectorised over a batch of clients, all randomness drawn from
  the injected ``numpy.random.Generator``;
- ``estimate(reports)`` — the server's unbiased aggregate of the (shuffled) reports;
- ``mse(n=None, x=None)`` — the closed-form mean squared error (exact for given inputs ``x``; without
  them, the supremum over the input domain for ``n`` clients);
- ``bits_per_report``, ``output_alphabet_size`` (``None`` where not meaningful);
- ``events(n, k=None, count=1)`` — the list of api.md accountant events one use costs (``count`` rounds,
  ``n`` users, ``k`` sampled per round when given);
- ``internals()`` — the calibrated internals (flip probabilities, budget split, radii …).

Usage::

    import numpy as np, mechanisms
    mech = mechanisms.get("kary_rr", epsilon0=1.0, k=8)
    reports = mech.randomize(np.array([0, 3, 3, 7]), np.random.default_rng(0))
    freqs = mech.estimate(reports)
    mech.events(n=10_000, count=100)  # [ShuffleRREvent(count=100, n=10000, epsilon0=1.0, categories=8)]

``available()`` lists the catalog (:mod:`mechanisms.catalog`); ``calibrate(...)`` picks ε0 (or the central
noise) so that the composed accounting of the mechanism meets an (ε, δ) target, using the ``accountant``
package (:mod:`mechanisms.calibration`) — or, with ``solve_for="count"``/``"n"``/``"k"``, the most rounds,
the fewest users or the largest sample per round a given mechanism meets it with.
"""

from __future__ import annotations

from ._base import (
    CalibrationTimeout,
    InputError,
    Mechanism,
    MechanismError,
    ParameterError,
    UnknownMechanismError,
)
from ._central import CentralMechanism
from .binary import BinaryRR, BinaryVector, KaryRR
from .calibration import (
    ACCOUNTING_FIELDS,
    AccountingCalibration,
    calibrate,
    calibration_probe,
    knob_of,
    probe_params,
    solve_for_choices,
)
from .catalog import available, get, mechanism_class, names
from .continuous import GaussianCentral, LaplaceCentral, LaplaceMean
from .hadamard_response import HadamardResponse
from .outlier_removal import OutlierRemovalMean
from .private_range import PrivateRange
from .user_level import UserMean, UserRange
from .vectors import L1Ball, L2Ball, LinfBox
from .winsorized import WinsorizedMean, tau_bounded, tau_subgaussian, winsorized_user_mean
from .winsorized_sgd import WinsorizedSGD

__all__ = [
    "ACCOUNTING_FIELDS",
    "AccountingCalibration",
    "BinaryRR",
    "BinaryVector",
    "CalibrationTimeout",
    "CentralMechanism",
    "GaussianCentral",
    "HadamardResponse",
    "InputError",
    "KaryRR",
    "L1Ball",
    "L2Ball",
    "LaplaceCentral",
    "LaplaceMean",
    "LinfBox",
    "Mechanism",
    "MechanismError",
    "OutlierRemovalMean",
    "ParameterError",
    "PrivateRange",
    "UnknownMechanismError",
    "UserMean",
    "UserRange",
    "WinsorizedMean",
    "WinsorizedSGD",
    "available",
    "calibrate",
    "calibration_probe",
    "get",
    "knob_of",
    "mechanism_class",
    "names",
    "probe_params",
    "solve_for_choices",
    "tau_bounded",
    "tau_subgaussian",
    "winsorized_user_mean",
]
