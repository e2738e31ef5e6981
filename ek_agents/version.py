"""The package version: the bottom layer, so the manifest can record it without importing the
package root (``ek_agents/__init__`` re-exports it as ``ek_agents.__version__``)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
