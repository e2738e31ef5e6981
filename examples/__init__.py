"""Bundled examples for ek-agents: a runnable tool-use world, agents and prices (``examples.shop``)."""
