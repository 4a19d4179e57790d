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


async def test_two_processes_write_the_same_file_and_lose_nothing(memory: str) -> None:
    count = 400
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, str(memory), str(count), json.dumps(DETERMINISTIC),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=str(Path(__file__).resolve().parents[1]))
        assert child.stdout is not None
        try:
            async with asyncio.timeout(120):  # a writer that hangs fails the test here
                assert (await child.stdout.readline()).strip() == b"ready"
                seen_from_child = 0
                for i in range(1, count + 1):
                    await engine.store("this-process", i,
                                       {"role": "user", "content": f"local {i}"})
                    if i % 20 == 0:
                        seen_from_child = len(await engine.recall("other-process"))
                        await engine.hybrid_query(session_id="other-process", query="process",
                                                  top_k=3)
                out, err = await child.communicate()
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
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


KILLED_WRITER = textwrap.dedent("""
    import asyncio, json, sys
    from core import Engine

    async def main(path, count):
        config = json.loads(sys.argv[3])
        async with Engine.open(path, config=config) as engine:
            for i in range(1, count + 1):
                await engine.store("victim", i, {"role": "user",
                                                 "content": f"acknowledged message {i} " * 20})
                print(i, flush=True)  # acknowledged: store() returned
            await asyncio.sleep(60)  # killed before it gets here

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
""")


async def test_a_killed_writer_loses_no_acknowledged_message(memory: str) -> None:
    config = {"embedding": {"backend": "deterministic", "fallback_dimensions": 64,
                            "batch_size": 8}}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILLED_WRITER, str(memory), "300", json.dumps(config),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=str(Path(__file__).resolve().parents[1]))
    assert child.stdout is not None
    acknowledged = 0
    try:
        async with asyncio.timeout(60):  # a writer that stops answering fails the test here
            while acknowledged < 150:  # kill it mid-stream, with the embedding worker busy
                line = await child.stdout.readline()
                assert line, (await child.stderr.read()).decode()  # type: ignore[union-attr]
                acknowledged = int(line)
    finally:
        child.kill()
        await child.wait()
    async with Engine.open(memory, config=config) as engine:
        assert await engine.backend.integrity_check() == ["ok"]
        stored = [r.sequence for r in await engine.recall("victim")]
        assert stored[:acknowledged] == list(range(1, acknowledged + 1))
        counts = await engine.backend.session_row_counts("victim")
        assert counts["chunks"] == counts["chunks_fts"] == len(stored)  # no half-stored message
        await engine.drain()
        status = await engine.embedding_status()
        assert status.backlog == 0 and status.embedded == len(stored)
