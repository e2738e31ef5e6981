"""``ek_agents.trajectory``: a spec module name, kept as a thin re-export of ``ek_agents.scoring.trajectory``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .scoring.trajectory import (TrajectoryMetric as TrajectoryMetric, SCHEMES as SCHEMES,
    trajectory_distance as trajectory_distance, trajectory_distances as trajectory_distances)

__all__ = ["TrajectoryMetric", "SCHEMES", "trajectory_distance", "trajectory_distances"]
