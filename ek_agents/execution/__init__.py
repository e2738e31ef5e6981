"""Execution: running an agent's trials -- the harness, the trial runner, the writer threads.

``harness`` (``run_trials``, ``store_trials``, ``run_suite``) runs over ``_trialrunner`` (the
event loop, timeouts, retries), which hands finished trials to ``_trialwriter``'s writer
threads; ``otelcapture`` captures each trial's OpenTelemetry spans (``capture="otel"``).

May import: ``stages``, ``records``, ``identity`` and the layers below them (see
``ek_agents.layers``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

#: The package's public names -> the module of the package that defines each: the one export
#: list (``__all__`` and the lazy lookups come from it; tests/test_architecture.py holds the
#: ``TYPE_CHECKING`` block to it). A name resolves on first use: importing one module of the
#: package does not import the others.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["run_coroutine"], "_sync"),
    **dict.fromkeys(["TrialRunner"], "_trialrunner"),
    **dict.fromkeys(["run_suite", "run_trials", "store_trials", "build_report", "new_run_id",
                    "trial_fingerprint"], "harness"),
    **dict.fromkeys(["OtelCapture", "TrialSpans", "make_capture", "CAPTURES"], "otelcapture"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from ._sync import (run_coroutine as run_coroutine)
    from ._trialrunner import (TrialRunner as TrialRunner)
    from .harness import (run_suite as run_suite, run_trials as run_trials,
                          store_trials as store_trials, build_report as build_report,
                          new_run_id as new_run_id, trial_fingerprint as trial_fingerprint)
    from .otelcapture import (OtelCapture as OtelCapture, TrialSpans as TrialSpans,
                              make_capture as make_capture, CAPTURES as CAPTURES)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
