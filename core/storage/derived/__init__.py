"""Indexes derived from the SQLite file, kept in step with every writer through the change log.

The file stays the truth: an index here is rebuilt from it whenever it cannot be brought up
to date (:mod:`core.storage.derived.changes`), and a query it cannot answer yet goes to SQL.
"""
