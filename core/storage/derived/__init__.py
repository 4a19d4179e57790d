"""Derived indexes: in-memory structures rebuilt from the SQLite file, which stays the truth."""
