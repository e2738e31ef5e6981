"""A segment writer's index document as canonical JSON, each entry dumped once.

A :class:`~ek_agents.records.segments.SegmentWriter` stores its whole index document (every
segment it sealed) after each segment: dumped whole each time, the index costs the square of
the segments -- a 100,000-trace monitor window seals ~25 segments of 4,096 trials, each entry
listing its trials: 325 entries dumped (pydantic's dump, then the encoder) instead of 25.
:class:`IndexJson` keeps each entry's canonical JSON from the seal that added it and joins
them into the document's bytes: ``core.canonical_json(index.to_dict())`` exactly (its keys,
sorted: ``run_id``, ``schema_version``, ``segments``, ``writer``; an entry nested in the
index carries no ``schema_version``). An index whose fields are not those three, or whose
entries are not the ones it dumped (changed by another hand, or not exactly of the entry
class), is dumped whole.
"""
from __future__ import annotations

from typing import Any

from ..base import SCHEMA_VERSION
from ..core import canonical_json

__all__ = ["IndexJson"]


class IndexJson:
    """``index -> canonical_json(index.to_dict())`` for one writer's growing index, each of its
    entries (of class ``entry_type``) dumped once."""

    def __init__(self, entry_type: type) -> None:
        self.entry_type = entry_type
        self.done: list = []  # (entry, its canonical JSON in the index), in the index's order

    def __call__(self, index: Any) -> bytes:
        segs, done = index.segments, self.done
        if (set(type(index).__pydantic_fields__) != {"run_id", "writer", "segments"}
                or len(done) > len(segs) or any(a is not b for (a, _), b in zip(done, segs))
                or any(type(e) is not self.entry_type for e in segs[len(done):])):
            return canonical_json(index.to_dict())
        for e in segs[len(done):]:
            d = e.to_dict()
            del d["schema_version"]
            done.append((e, canonical_json(d)))
        return b"".join([b'{"run_id":', canonical_json(index.run_id),
                         b',"schema_version":', canonical_json(SCHEMA_VERSION),
                         b',"segments":[', b",".join(j for _, j in done),
                         b'],"writer":', canonical_json(index.writer), b"}"])
