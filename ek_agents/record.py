"""``ek_agents.record``: the former run-record module, split by concept into ``ek_agents.runs``, kept as a thin re-export of ``ek_agents.runs.stagecache``, ``ek_agents.runs.documents``, ``ek_agents.runs.stages``, ``ek_agents.runs.baselines``, ``ek_agents.runs.identity``, ``ek_agents.runs.trials``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

# each home's __all__; record's own is their union (a superset of its names before the split)
from .runs.stagecache import *  # noqa: F403
from .runs.documents import *  # noqa: F403
from .runs.stages import *  # noqa: F403
from .runs.baselines import *  # noqa: F403
from .runs.identity import *  # noqa: F403
from .runs.trials import *  # noqa: F403
from .runs import baselines, documents, identity, stagecache, stages, trials

__all__ = [*stagecache.__all__, *documents.__all__, *stages.__all__, *baselines.__all__,
           *identity.__all__, *trials.__all__]
del baselines, documents, identity, stagecache, stages, trials  # only the homes' names remain
