"""Tests of the world helper: suite files, the shop example world, its agents, the OpenAI adapter."""
