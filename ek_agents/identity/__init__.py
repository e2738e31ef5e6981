"""Identity: what identifies an agent -- its code and the state that decides its answers.

``agentid`` digests an agent (closure cells, attributes, slots, partial arguments, defaults, a
bound ``__self__``, code objects for code without a file) into an :class:`AgentIdentity` and
lists what it could not identify, so a resume is refused, never guessed, and names an agent
(``agent_name``) and digests its source file (``code_digest``); ``_agentstate`` is the canonical
walk under it (``Walker``: values and code objects as deterministic JSON trees).

May import: the layers below it -- ``errors`` .. ``scoring`` (see ``ek_agents.layers``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

#: The package's public names -> the module of the package that defines each: the one export
#: list (``__all__`` and the lazy lookups come from it; tests/test_architecture.py holds the
#: ``TYPE_CHECKING`` block to it). A name resolves on first use: importing one module of the
#: package does not import the others.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["EK_CONFIG", "declared_config"], "_agentstate"),
    **dict.fromkeys(["AgentIdentity", "agent_identity", "identity_note", "agent_name",
                    "code_digest"], "agentid"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from ._agentstate import (EK_CONFIG as EK_CONFIG, declared_config as declared_config)
    from .agentid import (AgentIdentity as AgentIdentity, agent_identity as agent_identity,
                          identity_note as identity_note, agent_name as agent_name,
                          code_digest as code_digest)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
