"""``workbench pg grant|revoke|roles``: a database role per agent, bound to its namespace.

Run as the role that owns the memory's tables (the one that first opened it). A bound role
sees and writes only its namespace's rows, whatever SQL it sends: row-level security in the
database (core/storage/pg/roles.py), not a check in our code.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from workbench.command_line import (
    command_config,
    db_option,
    echo_json,
    json_option,
    memory_location,
    run_command,
)
from workbench.text import table

if TYPE_CHECKING:
    from core.locations import Location

PASSWORD_ENV = "WORKBENCH_ROLE_PASSWORD"


@click.group("pg")
def pg_group() -> None:
    """Roles on a PostgreSQL memory, each bound to one namespace by row-level security."""


def _server_memory(ctx: click.Context, db: Location | None) -> Location:
    """The PostgreSQL memory the command works on; exit 1 for a SQLite file."""
    location = memory_location(db, command_config(ctx))
    if not location.is_postgres:
        click.echo(f"error: {location} is a SQLite file, which has no roles; give a "
                   "postgresql:// URL with --db (or set [storage] url)", err=True)
        sys.exit(1)
    return location


def _password(value: str | None) -> str | None:
    """The password given: ``-`` reads one line from stdin."""
    if value == "-":
        return sys.stdin.readline().rstrip("\r\n")
    return value


@pg_group.command("grant")
@click.argument("namespace")
@click.argument("role")
@click.option("--password", default=None, envvar=PASSWORD_ENV,
              help=f"Set the role's password (- reads it from stdin; default: ${PASSWORD_ENV})."
                   " A value typed here is visible to other users' `ps`: prefer - or the"
                   " variable.")
@db_option
@json_option
@click.pass_context
def grant_command(ctx: click.Context, namespace: str, role: str, password: str | None,
                  db: Location | None, as_json: bool) -> None:
    """Bind ROLE (created as a login role when missing) to NAMESPACE: it can then read and
    write that namespace's rows and no other's."""
    from core.storage.pg import roles

    location = _server_memory(ctx, db)
    granted = run_command(roles.grant(location, namespace, role, _password(password)))
    if as_json:
        echo_json(granted.to_dict())
        return
    click.echo(f"role {granted.role!r} sees namespace {granted.namespace!r} only"
               f"{' (password set)' if password is not None else ''}")


@pg_group.command("revoke")
@click.argument("role")
@db_option
@json_option
@click.pass_context
def revoke_command(ctx: click.Context, role: str, db: Location | None, as_json: bool) -> None:
    """Unbind ROLE: it loses its namespace and its privileges on the memory (the role itself
    stays on the server)."""
    from core.storage.pg import roles

    location = _server_memory(ctx, db)
    revoked = run_command(roles.revoke(location, role))
    if as_json:
        echo_json(revoked.to_dict() if revoked else None)
        return
    if revoked is None:
        click.echo(f"error: role {role!r} is bound to no namespace of {location}", err=True)
        sys.exit(1)
    click.echo(f"role {revoked.role!r} no longer sees namespace {revoked.namespace!r}")


@pg_group.command("roles")
@db_option
@json_option
@click.pass_context
def roles_command(ctx: click.Context, db: Location | None, as_json: bool) -> None:
    """List the roles bound to a namespace."""
    from core.storage.pg import roles

    location = _server_memory(ctx, db)
    grants = run_command(roles.list_grants(location))
    if as_json:
        echo_json([grant.to_dict() for grant in grants])
        return
    if not grants:
        click.echo(f"no role is bound to a namespace of {location}", err=True)
        return
    rows: list[list[Any]] = [[g.role, g.namespace, g.granted_at,
                              "yes" if g.can_login else ("no" if g.exists else "role dropped")]
                             for g in grants]
    for line in table(["role", "namespace", "granted", "login"], rows):
        click.echo(line)
