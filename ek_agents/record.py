"""``ek_agents.record``: a documented path, kept as a thin re-export of ``ek_agents.records.stagecache``, ``ek_agents.records.documents``, ``ek_agents.stages.evaluate``, ``ek_agents.records.baselines``, ``ek_agents.records.fingerprint``, ``ek_agents.records.trials``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

# each home's __all__; record's own is their union
from .records.stagecache import *  # noqa: F403
from .records.documents import *  # noqa: F403
from .stages.evaluate import *  # noqa: F403
from .records.baselines import *  # noqa: F403
from .records.fingerprint import *  # noqa: F403
from .records.trials import *  # noqa: F403
from .records import baselines, documents, fingerprint as identity, stagecache, trials
from .stages import evaluate as stages

__all__ = [*stagecache.__all__, *documents.__all__, *stages.__all__, *baselines.__all__,
           *identity.__all__, *trials.__all__]
del baselines, documents, identity, stagecache, stages, trials  # only the homes' names remain
