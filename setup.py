"""Build hook for the one C extension, ``ek_agents.scoring._callcodes`` (everything else is in
pyproject.toml). It is optional: without a C compiler the install goes on and
``ek_agents.scoring.callcodes`` uses its pure-Python twin (same results, slower)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("ek_agents.scoring._callcodes", ["ek_agents/scoring/_callcodes.c"], optional=True,
                             extra_compile_args=["-O2"])])
