"""``ek_agents.record``: the former run-record module, split by concept into ``ek_agents.runs``, kept as a thin re-export of ``ek_agents.runs.stagecache``, ``ek_agents.runs.documents``, ``ek_agents.runs.stages``, ``ek_agents.runs.baselines``, ``ek_agents.runs.identity``, ``ek_agents.runs.trials``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .runs.stagecache import (lookup as lookup, cached as cached, stage_output as stage_output,
    write_doc as write_doc, write_tasks as write_tasks, StageRef as StageRef, SuiteRef as SuiteRef,
    GateRef as GateRef, ManifestRef as ManifestRef, index_output as index_output,
    cache_origin as cache_origin, EpisodesRef as EpisodesRef)
from .runs.documents import (source_digest as source_digest, episodes_doc as episodes_doc,
    episodes_of as episodes_of, tasks_doc as tasks_doc, tasks_of as tasks_of,
    tasks_for_episodes as tasks_for_episodes, read_source as read_source, SOURCES as SOURCES,
    prices_doc as prices_doc, prices_of as prices_of, results_of as results_of,
    trial_digests as trial_digests, record_run as record_run, run_report as run_report,
    UNSTORED as UNSTORED, read_manifest as read_manifest, read_run_doc as read_run_doc,
    check_run_doc as check_run_doc, read_ref as read_ref)
from .runs.stages import (grade_stage as grade_stage, metrics_stage as metrics_stage,
    cost_stage as cost_stage, gate_stage as gate_stage, guarded_gate as guarded_gate,
    sequential_stage as sequential_stage, regate as regate, gate_run as gate_run,
    record_suite as record_suite, record_prices as record_prices, ingest_run as ingest_run,
    ingest_suite as ingest_suite, run_grade as run_grade, run_metrics as run_metrics,
    run_cost as run_cost, run_gate as run_gate, write_gate as write_gate,
    run_sequential_gate as run_sequential_gate)
from .runs.baselines import (load_baseline as load_baseline, promote as promote,
    save_agent_baseline as save_agent_baseline, load_agent_baseline as load_agent_baseline,
    agent_regression_gate as agent_regression_gate, BASELINE_KIND as BASELINE_KIND,
    promote_baseline as promote_baseline)
from .runs.identity import (RunFingerprint as RunFingerprint, RunReuse as RunReuse,
    agent_config as agent_config, agent_name as agent_name, code_digest as code_digest,
    claim_run as claim_run, trial_matches as trial_matches, errored as errored,
    EK_CONFIG as EK_CONFIG)
from .runs.trials import (StoredTrial as StoredTrial, read_trials as read_trials,
    episodes_bytes as episodes_bytes, read_episodes as read_episodes,
    forget_episodes as forget_episodes, EPISODES_MEMO_DOCS as EPISODES_MEMO_DOCS,
    EPISODES_MEMO_EPISODES as EPISODES_MEMO_EPISODES, PlainEpisodeJson as PlainEpisodeJson,
    trial_grader as trial_grader, remember_graded as remember_graded)

__all__ = ["lookup", "cached", "stage_output", "write_doc", "write_tasks", "source_digest",
           "episodes_doc", "episodes_of", "tasks_doc", "tasks_of", "tasks_for_episodes",
           "read_source", "SOURCES", "prices_doc", "prices_of", "grade_stage", "metrics_stage",
           "cost_stage", "gate_stage", "guarded_gate", "sequential_stage", "regate", "results_of",
           "trial_digests", "record_run", "run_report", "load_baseline", "gate_run", "promote",
           "UNSTORED", "save_agent_baseline", "load_agent_baseline", "agent_regression_gate",
           "BASELINE_KIND", "record_suite", "record_prices", "ingest_run", "ingest_suite",
           "run_grade", "run_metrics", "run_cost", "run_gate", "write_gate", "run_sequential_gate",
           "promote_baseline", "StageRef", "SuiteRef", "GateRef", "ManifestRef", "read_manifest",
           "read_run_doc", "check_run_doc", "read_ref", "RunFingerprint", "RunReuse",
           "agent_config", "agent_name", "code_digest", "claim_run", "index_output",
           "trial_matches", "errored", "cache_origin", "EK_CONFIG", "StoredTrial", "EpisodesRef",
           "read_trials", "episodes_bytes", "read_episodes", "forget_episodes",
           "EPISODES_MEMO_DOCS", "EPISODES_MEMO_EPISODES", "PlainEpisodeJson", "trial_grader",
           "remember_graded"]
