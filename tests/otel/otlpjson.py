"""Write SDK spans as OTLP/JSON lines with the real encoders: opentelemetry's protobuf encoder
(``encode_spans``) then protobuf's generic JSON mapping (``json_format``: base64 ids), or the
same with hex ids (the OTLP/JSON of the specification, as the collector's file exporter writes)."""
from __future__ import annotations

import json
from pathlib import Path

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from ek_agents_examples.otel.traffic import hex_ids


def otlp_lines(spans: list, *, ids: str = "hex", batch: int = 50) -> list[str]:
    """One ``{"resourceSpans": ...}`` JSON line per ``batch`` spans."""
    out = []
    for i in range(0, len(spans), batch):
        doc = json_format.MessageToDict(encode_spans(spans[i:i + batch]))
        out.append(json.dumps(hex_ids(doc) if ids == "hex" else doc))
    return out


def write_otlp(path: Path, spans: list, *, ids: str = "hex", batch: int = 50) -> Path:
    path.write_text("\n".join(otlp_lines(spans, ids=ids, batch=batch)) + "\n", encoding="utf-8")
    return path
