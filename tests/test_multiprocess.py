"""Two real processes on one file (WAL): nothing lost, no "database is locked" surfaced."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from core import Engine
from tests.conftest import DETERMINISTIC

WRITER = textwrap.dedent("""
    import asyncio, json, sys
    from core import Engine

    async def main(path, count):
        config = json.loads(sys.argv[3])
        async with Engine.open(path, config=config) as engine:
            print("ready", flush=True)
            for i in range(1, count + 1):
                await engine.store("other-process", i,
                                   {"role": "user", "content": f"from the other process {i}"})
                if i % 50 == 0:
                    await engine.recall("this-process", limit=5)
            await engine.drain()
        print("done", flush=True)

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
""")


async def test_two_processes_write_the_same_file_and_lose_nothing(db_path: Path) -> None:
    count = 400
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, str(db_path), str(count), json.dumps(DETERMINISTIC),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=str(Path(__file__).resolve().parents[1]))
        assert child.stdout is not None
        assert (await child.stdout.readline()).strip() == b"ready"
        seen_from_child = 0
        for i in range(1, count + 1):
            await engine.store("this-process", i, {"role": "user", "content": f"local {i}"})
            if i % 20 == 0:
                seen_from_child = len(await engine.recall("other-process"))
                await engine.hybrid_query(session_id="other-process", query="process", top_k=3)
        out, err = await child.communicate()
        assert child.returncode == 0, err.decode()
        assert b"locked" not in err and b"Traceback" not in err, err.decode()
        assert out.strip().endswith(b"done")
        await engine.drain()
        ours = await engine.recall("this-process")
        theirs = await engine.recall("other-process")
        assert [r.sequence for r in ours] == list(range(1, count + 1))
        assert [r.sequence for r in theirs] == list(range(1, count + 1))
        assert seen_from_child <= count
        status = await engine.embedding_status()
        assert status.backlog == 0 and status.embedded == 2 * count
        assert await engine.backend.integrity_check() == ["ok"]
