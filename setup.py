"""Build hook for the C extensions (everything else is in pyproject.toml), both optional: without
a C compiler the install goes on and each falls back on its pure-Python twin (same results,
slower):

- ``ek_agents.scoring._callcodes``: the call encoding of the fast in_order distance
  (``ek_agents.scoring.callcodes``);
- ``ek_agents.bridge._otlpspans``: the plain spans of OTLP/JSON read into RawSpans
  (``ek_agents.bridge._otlp``), most of a monitor window's reading."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("ek_agents.scoring._callcodes", ["ek_agents/scoring/_callcodes.c"], optional=True,
                             extra_compile_args=["-O2"]),
                   Extension("ek_agents.bridge._otlpspans", ["ek_agents/bridge/_otlpspans.c"],
                             optional=True, extra_compile_args=["-O2"])])
