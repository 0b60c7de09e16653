"""Fixtures (filled in by the module that needs them)."""
