"""Looking at a memory file never drops the locks this process's own connections hold.

POSIX locks belong to the process: closing any descriptor of a file releases all of them.
A memory open here holds a SHARED lock that keeps another process, closing last, from
checkpointing the write-ahead log away underneath it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.storage.sqlite.connection import open_connection
from core.storage.sqlite.memory_file import examine
from core.storage.sqlite.open_files import open_in_this_process

_OPEN_AND_CLOSE = """
import sys, sqlean
conn = sqlean.connect(sys.argv[1], isolation_level=None)
conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
conn.close()
"""


def _memory(path: Path) -> None:
    conn = open_connection(path, read_only=False, busy_timeout_ms=1000)
    conn.execute("CREATE TABLE memory_migrations(version INTEGER)")
    conn.execute("INSERT INTO memory_migrations VALUES (1)")
    conn.close()


def test_examining_a_file_open_here_keeps_its_write_ahead_log(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _memory(path)
    reader = open_connection(path, read_only=False, busy_timeout_ms=1000)
    try:
        reader.execute("INSERT INTO memory_migrations VALUES (2)")
        # An emptied log: the file alone looks whole, which is when a look reads it directly.
        reader.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert path.with_name("memory.db-wal").stat().st_size == 0
        assert open_in_this_process(path)
        assert examine(path) == "memory"
        # Another process opens and closes the file. Were our SHARED lock gone, it would be
        # the last connection, checkpoint and delete the -wal and -shm we still read through.
        subprocess.run([sys.executable, "-c", _OPEN_AND_CLOSE, str(path)], check=True)
        assert path.with_name("memory.db-wal").exists()
        assert reader.execute("SELECT count(*) FROM memory_migrations").fetchone()[0] == 2
    finally:
        reader.close()
    assert not open_in_this_process(path)
