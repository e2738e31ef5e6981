"""The test suite as a package, so that ``tests.pipeline...`` (the pipeline tests' agent import
paths) is this repository's tests even when a dependency installs a top-level ``tests`` package
into site-packages (ppi-python, the dev-only reference of judge_corrected_rate(method="clt"),
does): a regular package found first on sys.path wins over a namespace package."""
