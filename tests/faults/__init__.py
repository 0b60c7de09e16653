"""Faults: access rights and credentials, a full or read-only disk, kill -9, slow providers, sync."""
