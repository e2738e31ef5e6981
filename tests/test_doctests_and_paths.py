"""Behaviour unchanged where a reader meets it: every >>> example in every ek_agents module
runs, and the import paths the spec and the docs used before the restructure (issue 24) still
give every name they gave."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import ek_agents

MODULES = ["ek_agents"] + sorted(m.name for m in pkgutil.walk_packages(ek_agents.__path__, "ek_agents."))


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    result = doctest.testmod(importlib.import_module(name), report=False,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_doctests_are_many():
    attempted = sum(doctest.testmod(importlib.import_module(n), report=False,
                                    optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE).attempted
                    for n in MODULES)
    assert attempted >= 250  # 290 when written: the walk really found the modules


#: ``ek_agents.<module>`` -> its ``__all__`` before the restructure (the spec's modules and the
#: paths README / DESIGN name), each of which must still import and resolve.
OLD_PATHS = {
    "toolcalls": ["AnyOf", "OMITTED", "ANY", "standardize_string", "as_calls", "CallComparer",
        "min_cost_assignment", "match_calls", "ToolCallMetric", "LEVELS", "bfcl_check",
        "CheckResult"],
    "trajectory": ["TrajectoryMetric", "SCHEMES", "trajectory_distance", "trajectory_distances"],
    "metrics": ["Checker", "output_match", "final_state_match", "recorded_success", "CHECKERS",
        "register_checker", "get_checker", "grade", "state_equal", "is_errored",
        "TaskSuccessMetric", "CostPerSuccessMetric", "GOLD_KEYS"],
    "judge": ["JudgeSignal", "JudgeMetric", "pairwise_judge", "judge_validation",
        "JUDGE_COST_TIER", "ALPHA_GOOD", "ALPHA_TENTATIVE"],
    "harness": ["run_suite", "run_trials", "store_trials", "build_report", "new_run_id",
        "trial_fingerprint", "save_agent_baseline", "load_agent_baseline", "agent_regression_gate",
        "AgentGateResult"],
    "manifest": ["RunManifest", "RunInputs", "package_info", "git_sha", "input_digest", "utc_now",
        "finite", "as_plain", "report_rows", "report_markdown", "TasksDocument",
        "EpisodesDocument", "GateDocument", "BaselineDocument", "check_document", "check_manifest",
        "check_report", "check_baseline", "DOCUMENTS", "REPORT_COUNTS", "reuse_lines",
        "sequential_line"],
    "htmlreport": ["render_html", "render_markdown", "write_report", "CSP", "RunPublication",
        "publish_run", "table_rows", "log_lines", "REPORT_FILE"],
    "record": ["lookup", "cached", "stage_output", "write_doc", "write_tasks", "source_digest",
        "episodes_doc", "episodes_of", "tasks_doc", "tasks_of", "tasks_for_episodes",
        "read_source", "SOURCES", "prices_doc", "prices_of", "grade_stage", "metrics_stage",
        "cost_stage", "gate_stage", "guarded_gate", "sequential_stage", "regate", "results_of",
        "trial_digests", "record_run", "run_report", "load_baseline", "gate_run", "promote",
        "UNSTORED", "save_agent_baseline", "load_agent_baseline", "agent_regression_gate",
        "BASELINE_KIND", "record_suite", "record_prices", "ingest_run", "ingest_suite",
        "run_grade", "run_metrics", "run_cost", "run_gate", "write_gate", "run_sequential_gate",
        "promote_baseline", "StageRef", "SuiteRef", "GateRef", "ManifestRef", "read_manifest",
        "read_run_doc", "check_run_doc", "read_ref", "RunFingerprint", "RunReuse", "agent_config",
        "agent_name", "code_digest", "claim_run", "index_output", "trial_matches", "errored",
        "cache_origin", "EK_CONFIG", "StoredTrial", "EpisodesRef", "read_trials", "episodes_bytes",
        "read_episodes", "forget_episodes", "EPISODES_MEMO_DOCS", "EPISODES_MEMO_EPISODES",
        "PlainEpisodeJson", "trial_grader", "remember_graded"],
    "stats": ["pass_at_k", "pass_hat_k", "wilson_interval", "newcombe_difference", "bootstrap_ci",
        "bootstrap_mean_cis", "difference_upper_bound", "trials_for_power", "normal_quantile",
        "Z95", "VECTORIZED_STATISTICS", "t_quantile", "ClusteredRate", "clustered_rate",
        "CI_METHODS", "success_interval", "cluster_bootstrap_ratio", "PairedDifference",
        "paired_difference", "paired_bootstrap_ratio_difference", "tasks_for_power",
        "obrien_fleming_spending", "group_sequential_bounds"],
    "store": ["Store", "StoreSettings", "open_store", "canonical_json", "sha256_hex", "parse_json",
        "episode_key", "run_key", "run_file_key", "report_key", "task_key", "read_url",
        "write_url", "DEFAULT_STORE", "TMP_MAX_AGE_S", "run_prefix", "episodes_prefix",
        "cache_key", "artifact_key", "baseline_key", "Lease", "lease_key", "acquire_lease",
        "release_lease", "break_lease", "read_lease"],
    "suite": ["Suite", "load_suite", "dump_suite", "suite_schema", "parse_suite"],
    "base": ["Step", "Trajectory", "Episode", "Cost", "RunProvenance", "ToolSpec", "TaskSpec",
        "tool_grammar", "suite_grammar", "task_table", "as_call", "is_episode",
        "DEFAULT_TASK_VALUE", "DESTRUCTIVE_WEIGHT", "SCHEMA_VERSION", "JsonShape", "NonFiniteJson",
        "encode_nonfinite", "decode_nonfinite"],
    "cost": ["ModelPrice", "per_million", "dollars", "episode_dollars", "cost_of_pass",
        "cost_report", "load_prices", "price_of", "UnknownModelPrice", "DEFAULT_CACHE_DISCOUNT",
        "DEFAULT_BATCH_DISCOUNT", "SERVICE_TIERS", "RATE_KINDS", "episode_model"],
    "bridge": ["as_agent", "trajectory_from_messages", "episode_from_messages", "cost_from_usage",
        "from_inspect_sample", "from_deepeval_test_case", "read_inspect_log",
        "read_tau_bench_results", "read_messages_jsonl"],
    "parsing": ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_BYTES", "MAX_DECOMPRESSED",
        "MAX_INFLATE_RATIO", "decode_text", "parse_json", "parse_json_lines", "parse_yaml",
        "check_tree", "read_capped", "decompressed_cap"],
    "localrun": ["evaluate_agent", "run_trials", "sequential_trials", "ORCHESTRATOR"],
    "errors": ["EkAgentsError", "InvalidInput", "BridgeError", "SchemaVersionError", "SuiteError",
        "InsufficientTrials", "IncomparableRuns", "BaselineError", "UnknownName",
        "UnknownModelPrice", "MissingDependency", "StoreError", "ArtifactNotFound",
        "StoreUnreachable", "StoreTimeout", "StoreAccessDenied", "BucketNotFound",
        "IntegrityError", "TransientAgentError", "AgentTimeout", "did_you_mean", "CheckFailed",
        "GateFailed", "AuditFailed", "DocumentError", "DigestMismatch", "RunMismatch", "RunInUse",
        "TooManyErrors"],
    "core": ["FieldSpec", "NodeType", "GraphGrammar", "Score", "Metric", "Signal", "Finding",
        "Provenance", "canonicalize", "default_canonicalizer", "FIELD_TYPES", "shape",
        "canonical_json", "construct", "copy_plain", "make_score"],
    "prices": ["ModelPrice", "load_prices", "price_of", "check_rate", "service_tier_of",
        "DEFAULT_CACHE_DISCOUNT", "DEFAULT_BATCH_DISCOUNT", "SERVICE_TIERS", "RATE_KINDS"],
    "reporting": ["ReliabilityReport", "reliability", "pass_hat_curve", "DEFAULT_RESAMPLES",
        "build_report", "graded_report", "reliability_with_run", "with_cost", "score_metrics",
        "run_provenance"],
    "gate": ["AgentGateResult", "regression_gate", "as_report", "as_run", "check_comparable",
        "ALPHA", "POWER", "Z"],
    "sequential": ["SequentialVerdict", "sequential_look", "sequential_gate",
        "baseline_task_counts", "per_check_alpha", "replay_sequential", "gate_document",
        "check_baseline_comparable", "SEQUENTIAL_METHOD", "DEFAULT_MIN_EFFECT"],
}


@pytest.mark.parametrize("module", sorted(OLD_PATHS))
def test_an_old_import_path_still_gives_its_names(module):
    mod = importlib.import_module(f"ek_agents.{module}")
    missing = [n for n in OLD_PATHS[module] if not hasattr(mod, n)]
    assert missing == [], f"ek_agents.{module} lost {missing}"
    for n in OLD_PATHS[module]:  # ``from ek_agents.<module> import <name>`` too
        exec(f"from ek_agents.{module} import {n}", {})


def test_a_module_path_the_readme_names_gives_the_moved_module_itself():
    import ek_agents.execution.otelcapture as capture_home
    import ek_agents.records.manifest as home
    import ek_agents.runs.manifest as old
    from ek_agents.runs.otelcapture import OtelCapture

    assert old is home and home.__spec__.name == "ek_agents.records.manifest"
    assert OtelCapture is capture_home.OtelCapture
    assert "RunManifest" in dir(old)
