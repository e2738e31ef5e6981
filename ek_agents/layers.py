"""The layer order of ek_agents, declared once (docs/ARCHITECTURE.md draws it).

Bottom to top; a module may import modules of its own layer or of the layers below it, never
above (tests/test_architecture.py reads this table and names any import that points up, and
any module missing from it). Within a layer the imports must not form a cycle (the same test
file checks every cycle). Each entry names a module or a subpackage of ``ek_agents`` (a
subpackage covers its modules); the most specific entry wins.

This module imports nothing: it is data.
"""

__all__ = ["LAYERS", "SHIMS", "LAZY_IMPORTS", "DOCUMENTED_LAZY", "layer_of"]

#: Bottom to top: (layer name, the modules / subpackages in it).
LAYERS: tuple = (
    ("foundation", ("errors", "version", "layers", "lazy", "subworker")),
    ("core", ("core",)),
    ("parsing", ("parsing",)),
    ("shapes", ("base",)),
    ("store", ("store",)),
    ("inputs and numbers", ("bridge", "suite", "stats", "labels", "spancounts")),
    ("prices and agents", ("prices", "cost", "modelcosts", "adapters")),
    ("scoring", ("scoring",)),
    ("evaluation", ("reporting", "gate", "sequential")),
    ("identity", ("identity",)),
    ("records", ("records",)),
    ("stages", ("stages",)),
    ("execution", ("execution",)),
    ("pipeline", ("pipeline",)),
    ("runs", ("runs",)),  # the re-exports of the five packages above
    ("monitoring", ("monitor",)),
    ("reports", ("report",)),
    ("commands", ("localrun", "cliargs", "exportcmd", "cli", "monitorcli")),
    ("facade", ("",)),  # ek_agents/__init__: the public names, resolved lazily
)

#: Flat module names kept for the spec and the docs: each only re-exports its home(s), and no
#: ek_agents module imports one (new code imports the home).
SHIMS: dict = {
    "toolcalls": ("scoring.toolcalls",),
    "trajectory": ("scoring.trajectory",),
    "metrics": ("scoring.metrics",),
    "judge": ("scoring.judge",),
    "harness": ("execution.harness",),
    "manifest": ("records.manifest",),
    "htmlreport": ("report.htmlreport",),
    "record": ("records.stagecache", "records.documents", "stages.evaluate", "records.baselines",
               "records.fingerprint", "records.trials"),
}

#: Function-level imports of ek_agents modules, each pointing down (or within its package) and
#: made late for a measured reason -- never to dodge a cycle: (importer, imported) -> why.
LAZY_IMPORTS: dict = {
    ("scoring.facades", "scoring.metrics"): "the metric table: ~60 ms of import "
                                            "(trajectory's rapidfuzz, toolcalls, bfcl) that "
                                            "reporting and ek.score(custom) need not pay",
    ("scoring.facades", "scoring.toolcalls"): "as above",
    ("scoring.facades", "scoring.trajectory"): "as above",
    ("scoring.metrics", "cost"): "CostPerSuccessMetric only: cost (and stats) is ~15 ms",
    ("adapters.openai_agent", "bridge"): "the bridges are ~160 ms of import (-X importtime), "
                                         "paid only when an answer is turned into an episode",
}

#: Modules whose function-level imports are explained, with the measurement, in their docstring.
DOCUMENTED_LAZY: tuple = ("cli", "cliargs", "exportcmd", "monitorcli")


def layer_of(module: str) -> tuple:
    """``(layer index, entry)`` of an ``ek_agents`` module (``"stages.evaluate"``, ``""`` for the
    package root); a shim's is the facade's. KeyError when the table does not place it."""
    if module in SHIMS:
        return len(LAYERS) - 1, module
    best = None
    for i, (_, entries) in enumerate(LAYERS):
        for e in entries:
            if module == e or (e and module.startswith(e + ".")):
                if best is None or len(e) > len(best[1]):
                    best = (i, e)
    if best is None:
        raise KeyError(f"ek_agents.{module} is in no layer of ek_agents.layers.LAYERS: add it "
                       "to the layer it belongs to")
    return best
