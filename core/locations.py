"""What a memory location is: a SQLite file path, or a PostgreSQL URL, and how to show it.

Every front end takes one string for where the memory lives (``workbench PATH``, ``--db``,
``[storage] url``, ``Engine.open``). :func:`parse_location` decides what it names:

- ``postgresql://…`` or ``postgres://…`` (any case): the team backend, a PostgreSQL server;
- any other ``scheme://…``: refused, naming the schemes that work, so a typo such as
  ``postgressql://`` or ``mysql://`` never silently becomes a new SQLite file of that name;
- anything else (and any ``os.PathLike``): a SQLite file.

A URL may carry a password (``postgresql://agent:secret@db/memory`` or
``?password=secret``). :func:`redact_url` removes it, and a :class:`Location` only ever
prints its redacted form, so the password cannot reach a log line, an error message, the
app's header or ``doctor`` by way of ``str()``, ``repr()`` or an f-string.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

from core.errors import InvalidInput

POSTGRES_SCHEMES = ("postgresql", "postgres")

# A scheme is a letter then letters, digits, "+", "-" or "."; two characters at least, so
# a Windows drive ("C://folder", rare but legal) stays a path.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")

# Query parameters libpq reads a secret from; both are dropped from what is shown.
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})

REDACTED = "***"

Kind = Literal["sqlite", "postgresql"]


@dataclass(frozen=True)
class Location:
    """Where a memory lives, parsed once: its kind and its target.

    ``target`` is the path (SQLite) or the whole URL, password included, for the driver
    alone: it is left out of ``repr()``, and ``str()`` is :attr:`display`.
    """

    kind: Kind
    target: str = field(repr=False)
    display: str

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    @property
    def path(self) -> Path:
        """The SQLite file; a PostgreSQL location has none."""
        if self.kind != "sqlite":
            raise ValueError(f"{self.display} is a PostgreSQL URL, not a file")
        return Path(self.target)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The password(s) the target carries, as written and percent-decoded, so an error
        message from the driver can be scrubbed of them (:func:`scrub`)."""
        return url_secrets(self.target) if self.is_postgres else ()

    def __str__(self) -> str:
        return self.display


def parse_location(value: str | os.PathLike[str]) -> Location:
    """The :class:`Location` ``value`` names; ``InvalidInput`` for an unsupported scheme."""
    if not isinstance(value, str):
        path = os.fspath(value)
        return Location("sqlite", path, path)
    match = _SCHEME.match(value)
    if match is None:
        return Location("sqlite", value, value)
    scheme = match.group(1).lower()
    if scheme not in POSTGRES_SCHEMES:
        supported = ", ".join(f"{name}://" for name in POSTGRES_SCHEMES)
        raise InvalidInput(
            f"{redact_url(value)}: {scheme}:// is not a memory location this workbench can "
            f"open; give a SQLite file path, or a PostgreSQL URL ({supported})")
    return Location("postgresql", value, redact_url(value))


def redact_url(url: str) -> str:
    """``url`` without its password: the userinfo's (kept as ``***``, so a reader sees that
    one was given) and any ``password=``/``sslpassword=`` query parameter (dropped).

    A URL too malformed to split (an unclosed ``[`` in the host) is shown as its scheme
    alone: nothing of it can be told apart from a secret.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        scheme = _SCHEME.match(url)
        return f"{scheme.group(1) if scheme else 'unparseable'}://{REDACTED}"
    userinfo, at, hosts = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at:
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:{REDACTED}@{hosts}" if colon else f"{user}@{hosts}"
    query = "&".join(pair for pair in parts.query.split("&")
                     if pair and unquote(pair.partition("=")[0]).lower()
                     not in _SECRET_PARAMETERS)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> tuple[str, ...]:
    """Every password in ``url``, as written and percent-decoded, longest first (so one that
    contains another is replaced whole); empty ones left out."""
    try:
        parts = urlsplit(url)
        netloc, query = parts.netloc, parts.query
    except ValueError:  # unsplittable: the userinfo ends at the last "@", the query at "?"
        netloc, _mark, query = url.partition("://")[2].partition("?")
    found: list[str] = []
    userinfo, at, _hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        found.append(userinfo.partition(":")[2])
    for pair in query.split("&"):
        key, _equals, value = pair.partition("=")
        if unquote(key).lower() in _SECRET_PARAMETERS:
            found.append(value)
    variants = {variant for secret in found
                for variant in (secret, unquote(secret), unquote_plus(secret))}
    return tuple(sorted((v for v in variants if v), key=len, reverse=True))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text
