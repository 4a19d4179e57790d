"""The memory an agent writes on purpose: notes (with pynchy's memory tools and a file
export), and facts. The engine offers them as methods; see :mod:`core.notes.service`,
:mod:`core.notes.transfer` and :mod:`core.notes.facts`. Nothing is imported here, so
``import core.notes`` stays free.
"""
