"""What a full-text leg executed, as it executed it: what ``explain`` shows.

Each backend builds its own full-text statements (a session's prefixed MATCH, a namespace's
MaxScore rounds, a tag or scope filter beside the MATCH, a PostgreSQL tsquery, a derived
index's bm25 in memory), so only the backend can say what ran. It records every statement in
order, with what it returned, and retrieval shows them as they are: a person can paste the
expression, the ranking and the filter into SQL and get the same candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FTS5 = "fts5"
POSTGRESQL = "postgresql"
DERIVED = "derived index"
LIKE = "like"


@dataclass(frozen=True)
class Executed:
    """One full-text statement as the backend ran it."""

    engine: str  # FTS5, POSTGRESQL, DERIVED or LIKE
    expression: str
    """FTS5: the MATCH string as sent; PostgreSQL: the tsquery as SQL; LIKE: the pattern;
    the derived index: the FTS5 MATCH (or tsquery) its ranking equals."""
    ranking: str  # the rank as SQL ("bm25(chunks_fts, 0, 0, 0, 1.0, 0.5)"), or how it ranked
    filter: str = ""  # SQL beside the match, its values written in ("c.session_id = 's'")
    rows: int = 0  # rows it returned
    parameters: dict[str, Any] = field(default_factory=dict)
    """What else decided the answer: the derived index's words and bm25 parameters (k1, b,
    N, avgdl, column weights), a MaxScore round's essential words."""

    def describe(self) -> str:
        """The statement in one line, for a person."""
        where = f" WHERE {self.filter}" if self.filter else ""
        if self.engine == DERIVED:
            shown = ", ".join(f"{name} {value}" for name, value in self.parameters.items())
            return f"derived index ({shown}) = {self.expression}"
        if self.engine == LIKE:
            return f"LIKE {sql_literal(self.expression)}{where}"
        if self.engine == POSTGRESQL:
            return f"fts @@ ({self.expression}){where}, ranked by {self.ranking}"
        return f"MATCH {sql_literal(self.expression)}{where}, ranked by {self.ranking}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"engine": self.engine, "expression": self.expression, "ranking": self.ranking,
                "filter": self.filter, "rows": self.rows, "parameters": dict(self.parameters)}


def sql_literal(value: object) -> str:
    """``value`` as an SQL literal (a string quoted, its quotes doubled), so a filter shown
    with its values written in runs as shown."""
    if isinstance(value, bool) or value is None:
        return {True: "1", False: "0", None: "NULL"}[value]
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def inlined(sql: str, params: list[Any], placeholder: str = "?") -> str:
    """``sql`` with each ``placeholder`` replaced by its parameter as a literal."""
    parts = sql.split(placeholder)
    if len(parts) != len(params) + 1:
        raise ValueError(f"{len(parts) - 1} placeholders for {len(params)} parameters")
    out = [parts[0]]
    for value, part in zip(params, parts[1:], strict=True):
        out += [sql_literal(value), part]
    return "".join(out)
