"""scalpel-desktop: cache-safe surgery on AI-agent request histories."""

__version__ = "0.3.0"
