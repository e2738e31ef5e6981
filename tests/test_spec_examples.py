"""Every >>> example of ../shared/spec runs unchanged under the ek.agents -> ek_agents mapping."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.mark.skipif(not (SHARED / "spec").is_dir(), reason="../shared/spec is not beside this checkout")
def test_spec_examples_all_pass():
    out = subprocess.run([sys.executable, str(SHARED / "tools" / "spec_examples.py"), str(SHARED / "spec")],
                         capture_output=True, text=True, timeout=300)
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr
    assert out.returncode == 0 and last.endswith(" 0 failed"), out.stdout[-4000:] + out.stderr[-2000:]


def test_import_is_light():
    code = ("import sys, time; t=time.perf_counter(); import ek_agents; "
            "print(time.perf_counter()-t); print('prefect' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    _, flags = out.stdout.strip().splitlines()
    assert flags == "False False"
