"""PostgreSQL: TO BE WRITTEN — core/storage/schedules.py's operations on an async connection."""

from __future__ import annotations

from typing import Any

from core.storage.pg.connection import Conn


async def insert_schedule(conn: Conn, row: dict[str, Any]) -> dict[str, Any]:
    """Store a new schedule."""
    raise NotImplementedError("PostgreSQL: insert_schedule")


async def get_schedule(conn: Conn, schedule_id: str) -> dict[str, Any]:
    """One schedule; ``NotFound`` when there is none."""
    raise NotImplementedError("PostgreSQL: get_schedule")


async def schedules_named(conn: Conn, name: str, user_id: str | None) -> list[dict[str, Any]]:
    """Schedules with this name (of one user, or of all)."""
    raise NotImplementedError("PostgreSQL: schedules_named")


async def search_schedules(
    conn: Conn,
    user_id: str | None,
    status: str | None,
    name: str | None,
    text: str | None,
    limit: int,
    offset: int,
) -> tuple[int, list[dict]]:
    """(total, page) of schedules matching every filter given, newest first."""
    raise NotImplementedError("PostgreSQL: search_schedules")


async def count_schedules(conn: Conn, user_id: str) -> int:
    """A user's schedules."""
    raise NotImplementedError("PostgreSQL: count_schedules")


async def delete_schedule(conn: Conn, schedule_id: str) -> bool:
    """Delete a schedule and (by cascade) its runs; False when there was none."""
    raise NotImplementedError("PostgreSQL: delete_schedule")


async def update_schedule(
    conn: Conn, schedule_id: str, changes: dict[str, Any], now: str
) -> dict[str, Any]:
    """Apply checked changes; ``NotFound`` when there is no such schedule."""
    raise NotImplementedError("PostgreSQL: update_schedule")


async def due_schedules(conn: Conn, now: str, limit: int) -> list[dict[str, Any]]:
    """Active schedules whose next run is at or before ``now``, soonest first (the partial"""
    raise NotImplementedError("PostgreSQL: due_schedules")


async def claim_due(
    conn: Conn, now: str, runner: str, until: str, limit: int
) -> list[dict[str, Any]]:
    """Claim up to ``limit`` due schedules no live claim holds, for ``runner`` until"""
    raise NotImplementedError("PostgreSQL: claim_due")


async def release_claim(conn: Conn, schedule_id: str, runner: str) -> None:
    """Give a claim back without recording a run."""
    raise NotImplementedError("PostgreSQL: release_claim")


async def record_run_and_reschedule(
    conn: Conn,
    run: dict[str, Any],
    next_run_at: str | None,
    status: str | None,
    status_reason: str | None,
    failure_limit: int,
    keep: int,
    now: str,
) -> dict[str, Any]:
    """Record a run and reschedule its schedule in one transaction (seed 001)."""
    raise NotImplementedError("PostgreSQL: record_run_and_reschedule")


async def prune_run_history(conn: Conn, schedule_id: str, keep: int) -> int:
    """Delete all but the newest ``keep`` runs of a schedule; how many went."""
    raise NotImplementedError("PostgreSQL: prune_run_history")


async def run_history(conn: Conn, schedule_id: str, limit: int) -> list[dict[str, Any]]:
    """A schedule's runs, newest first."""
    raise NotImplementedError("PostgreSQL: run_history")


async def count_runs(conn: Conn, schedule_id: str) -> int:
    """How many runs of a schedule the history holds."""
    raise NotImplementedError("PostgreSQL: count_runs")


async def get_run(conn: Conn, run_id: str) -> dict[str, Any]:
    """One run; ``NotFound`` when there is none."""
    raise NotImplementedError("PostgreSQL: get_run")
