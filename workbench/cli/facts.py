"""``workbench facts …``: aidaemon's facts, a value under a key unique within its category.

Every command works in one namespace: ``--namespace``, else the configured agent identity,
as ``workbench notes`` does. ``facts set`` is an upsert: the same category and key replace
the value (and the source), and the output says whether the fact was added or replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from core.locations import Location
from core.notes.facts import SOURCES
from workbench.command_line import db_option, echo_json, json_option, on_engine
from workbench.text import count, one_line, short_time, table

if TYPE_CHECKING:
    from core.engine import Engine

VALUE_CHARS = 60
"""A value is cut to this many characters on one line in ``facts list``."""

_CATEGORY = click.argument("category")
_KEY = click.argument("key")
_NAMESPACE = click.option("--namespace", default=None,
                          help="The namespace the fact is in (default: the configured agent).")


def _on_facts(ctx: click.Context, db: Location | None, work: Any, *, writes: bool,
              adds: bool = False) -> Any:
    """Run ``work(engine)`` for a command that reads or ``writes``, without the embedding
    worker: a fact is never embedded. A command that ``adds`` a fact creates a missing
    memory file."""
    return on_engine(ctx, db, work, writes=writes, warn=False, start_worker=False,
                     adds=adds)


def _named(fact: Any) -> str:
    """``fact 'name' in category 'user' of namespace 'default'``, as the engine names one."""
    return (f"fact {fact.key!r} in category {fact.category!r} of namespace "
            f"{fact.namespace!r}")


@click.group("facts")
def facts_group() -> None:
    """List, get, set (upsert) and remove a namespace's facts: a value under a category and
    a key."""


@facts_group.command("list")
@db_option
@_NAMESPACE
@click.option("--category", default=None, help="Only the facts of this category.")
@json_option
@click.pass_context
def list_command(ctx: click.Context, db: Location | None, namespace: str | None,
                 category: str | None, as_json: bool) -> None:
    """List a namespace's facts by category, then key: value (on one line), source, change."""

    async def work(engine: Engine) -> tuple[str, list[Any]]:
        facts = await engine.list_facts(category=category, namespace=namespace)
        return engine.notes.namespace(namespace), facts

    shown_namespace, facts = _on_facts(ctx, db, work, writes=False)
    if as_json:
        echo_json({"namespace": shown_namespace, "category": category,
                   "facts": [fact.to_dict() for fact in facts]})
        return
    rows = [(fact.category, fact.key, one_line(fact.value, VALUE_CHARS) or "-", fact.source,
             short_time(fact.updated_at)) for fact in facts]
    if rows:
        for line in table(("category", "key", "value", "source", "updated"), rows):
            click.echo(line)
    of_category = f" of category {category!r}" if category is not None else ""
    click.echo(f"{count(len(rows), 'fact')}{of_category} in namespace {shown_namespace!r}")


@facts_group.command("get")
@_CATEGORY
@_KEY
@db_option
@_NAMESPACE
@json_option
@click.pass_context
def get_command(ctx: click.Context, category: str, key: str, db: Location | None,
                namespace: str | None, as_json: bool) -> None:
    """Show one fact: its fields, then its value (exit 1 when there is none)."""
    fact = _on_facts(ctx, db,
                     lambda engine: engine.get_fact(category, key, namespace=namespace),
                     writes=False)
    if as_json:
        echo_json(fact.to_dict())
        return
    fields = fact.to_dict()
    value = fields.pop("value")
    for name, field in fields.items():
        click.echo(f"{name + ':':<12}{field}")
    click.echo("")
    click.echo(value)


@facts_group.command("set")
@_CATEGORY
@_KEY
@click.argument("value")
@db_option
@_NAMESPACE
@click.option("--source", type=click.Choice(SOURCES), default="user", show_default=True,
              help="Who stated the fact: the agent or its user.")
@json_option
@click.pass_context
def set_command(ctx: click.Context, category: str, key: str, value: str, db: Location | None,
                namespace: str | None, source: str, as_json: bool) -> None:
    """Store VALUE under CATEGORY and KEY; a fact already there has its value and source
    replaced (its creation time kept), and the output says which it was."""

    async def work(engine: Engine) -> tuple[Any, Any]:
        from core.errors import NotFound

        # The engine's upsert does not say whether it replaced, so read first; a writer
        # in another process between the two could make the word (not the write) wrong.
        try:
            previous = await engine.get_fact(category, key, namespace=namespace)
        except NotFound:
            previous = None
        fact = await engine.upsert_fact(category, key, value, source=source,
                                        namespace=namespace)
        return previous, fact

    previous, fact = _on_facts(ctx, db, work, writes=True, adds=True)
    if as_json:
        echo_json({**fact.to_dict(), "outcome": "added" if previous is None else "replaced",
                   "previous_value": None if previous is None else previous.value})
    elif previous is None:
        click.echo(f"added {_named(fact)}: {one_line(fact.value, VALUE_CHARS)!r}")
    else:
        click.echo(f"replaced {_named(fact)}: {one_line(previous.value, VALUE_CHARS)!r} → "
                   f"{one_line(fact.value, VALUE_CHARS)!r}")


@facts_group.command("rm")
@_CATEGORY
@_KEY
@db_option
@_NAMESPACE
@click.option("--yes", is_flag=True, help="Remove without asking.")
@json_option
@click.pass_context
def rm_command(ctx: click.Context, category: str, key: str, db: Location | None,
               namespace: str | None, yes: bool, as_json: bool) -> None:
    """Remove a fact (exit 1 when there is none)."""

    async def work(engine: Engine) -> Any:
        from core.errors import NotFound

        fact = await engine.get_fact(category, key, namespace=namespace)  # NotFound: none
        if not yes:
            click.confirm(f"remove {_named(fact)} ({one_line(fact.value, VALUE_CHARS)!r})?",
                          abort=True, err=True)
        if not await engine.delete_fact(category, key, namespace=namespace):
            raise NotFound(f"{_named(fact)} was removed by another writer first")
        return fact

    fact = _on_facts(ctx, db, work, writes=True)
    if as_json:
        echo_json({"removed": True, **fact.to_dict()})
    else:
        click.echo(f"removed {_named(fact)}")
