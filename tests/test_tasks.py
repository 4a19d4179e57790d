"""Background tasks stop for sure, even one that lets a cancellation go (as a driver's
``asyncio.wait_for`` does on Python 3.11 when the cancellation meets a completion)."""

from __future__ import annotations

import asyncio

from core.tasks import cancel_and_wait


async def test_a_task_that_swallows_one_cancellation_is_cancelled_again() -> None:
    swallowed = 0

    async def loop() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed += 1  # the lost cancellation: it goes on to its next sleep

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    assert await asyncio.wait_for(cancel_and_wait(task), timeout=5) == [None]
    assert task.cancelled() and swallowed == 1


async def test_a_task_that_failed_earlier_gives_its_error() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    task = asyncio.create_task(fails())
    await asyncio.sleep(0)
    (error,) = await cancel_and_wait(task)
    assert isinstance(error, ValueError)
