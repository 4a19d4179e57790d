"""Attacks through the command line, each command run in this process by click's runner.

The commands that take ``--namespace`` (notes, facts, search, import, export) are given
crafted namespaces; ``--session`` and the session-named commands crafted session ids; the
attacker's own scopes FTS syntax, tags and the victim's note and schedule references. A
command opens the memory file itself (~25 ms), so the suite's run tries a spread of each list
(``thorough`` tries every input); the engine part tries them all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from core.storage.vocabulary import memory_session_id
from workbench.bench.isolation.inputs import (
    crafted_namespaces,
    crafted_note_refs,
    crafted_schedule_refs,
    crafted_sessions,
    crafted_tags,
    fts_queries,
)
from workbench.bench.isolation.probe import Probe, as_text
from workbench.bench.isolation.victim import (
    ATTACKER,
    ATTACKER_CHAT,
    ATTACKER_MARK,
    ATTACKER_WRITER,
    BAIT,
    VICTIM,
    VICTIM_CHAT,
    VICTIM_FACT,
    VICTIM_MEMORY_KEY,
    VICTIM_NOTE_ALIAS,
    VICTIM_NOTE_NAME,
    VICTIM_SCHEDULE_NAME,
    VICTIM_TAG,
    Planted,
)

ENTRY = "CLI"


def spread(items: Sequence[Any], count: int, thorough: bool) -> list[Any]:
    """``count`` items spread evenly over ``items`` (all of them when ``thorough``)."""
    if thorough or len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(n * step)] for n in range(count)]


def _cli_text(text: str) -> bool:
    """Whether a string can be a command-line argument (the OS passes no NUL)."""
    return "\x00" not in text


class Commands:
    """Runs ``workbench`` commands as cases: output and written files checked for markers."""

    def __init__(self, root: click.Command, db_path: str | Path, config_path: Path, probe: Probe,
                 out: Path) -> None:
        from click.testing import CliRunner

        self._root = root
        self._runner = CliRunner(env={"WORKBENCH_CONFIG": str(config_path)})
        self._db = str(db_path)
        self.probe = probe
        self.out = out

    def run(self, operation: str, args: list[str], *, writes: bool = False,
            reads: Sequence[Path] = (), given: Sequence[str] = ()) -> str:
        """Run ``workbench ARGS --db FILE`` as a case; ``reads`` are files it writes (read
        back and checked), ``given`` what else the attacker gave (a file's content)."""
        for path in reads:
            path.unlink(missing_ok=True)
        argv = [*args[:1], *_with_db(args[1:], self._db)]
        result = self._runner.invoke(self._root, argv)
        text = result.output
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            text += as_text(result.exception)
            self.probe.crash(ENTRY, operation, [*args, *given], as_text(result.exception))
        for path in reads:
            if path.is_file():
                text += path.read_text(encoding="utf-8", errors="replace")
            elif path.is_dir():
                text += "".join(p.read_text(encoding="utf-8", errors="replace")
                                for p in sorted(path.iterdir()))
        self.probe.check(ENTRY, operation, [*args, *given], text)
        if writes:
            self.probe.unchanged(ENTRY, operation, [*args, *given])
        return text

    def invoke(self, args: list[str]) -> Any:
        """Run a command that is not an attack (the developer's own view)."""
        return self._runner.invoke(self._root, [*args[:1], *_with_db(args[1:], self._db)])


def _with_db(args: list[str], db: str) -> list[str]:
    """``args`` with ``--db`` placed before a ``--`` (after it, everything is positional)."""
    if "--" in args:
        at = args.index("--")
        return [*args[:at], "--db", db, *args[at:]]
    return [*args, "--db", db]


def attack_cli(root: click.Command, db_path: str | Path, config_path: Path, planted: Planted,
               probe: Probe, workdir: Path, *, thorough: bool = False) -> None:
    """Every command-line attack, on the ``workbench`` command ``root``."""
    out = workdir / "cli-out"
    out.mkdir(exist_ok=True)
    cli = Commands(root, db_path, config_path, probe, out)
    notes_group = root.commands.get("notes") if isinstance(root, click.Group) else None
    notes_commands = getattr(notes_group, "commands", {})
    namespaces = [ns for ns in crafted_namespaces(VICTIM) if _cli_text(ns)]
    for ns in spread(namespaces, 8, thorough):
        _namespace_commands(cli, ns, "export" in notes_commands)
    exact = {VICTIM_CHAT, memory_session_id(VICTIM)}  # the developer's own view, not attacks
    sessions = [s for s in crafted_sessions(VICTIM_CHAT, VICTIM) if _cli_text(s)
                and s not in exact]
    for sid in spread(sessions, 6, thorough):
        _session_commands(cli, sid)
    queries = [q for q in fts_queries(VICTIM_CHAT, VICTIM, BAIT) if _cli_text(q) and q]
    for query in spread(queries, 12, thorough):
        cli.run("search --session --raw-fts", ["search", "--session", ATTACKER_CHAT,
                                               "--raw-fts", "--explain", "--json", "--", query])
        cli.run("search --namespace", ["search", "--namespace", ATTACKER, "--explain",
                                       "--json", "--", query])
        cli.run("notes list --text", ["notes", "list", "--namespace", ATTACKER, "--text",
                                      query, "--json"])
    for tags in spread(crafted_tags(VICTIM_TAG), 6, thorough):
        flags = [part for tag in tags for part in ("--tag", tag)]
        cli.run("search --tag", ["search", BAIT, "--namespace", ATTACKER, *flags, "--json"])
        cli.run("notes list --tag", ["notes", "list", "--namespace", ATTACKER, *flags])
    _reference_commands(cli, planted, thorough)
    _log_and_imports(cli, planted, "import" in notes_commands)


def _namespace_commands(cli: Commands, ns: str, notes_export: bool) -> None:
    scoped = ["--namespace", ns]
    cli.run("notes list", ["notes", "list", *scoped, "--json"])
    cli.run("notes show", ["notes", "show", VICTIM_NOTE_NAME, *scoped])
    cli.run("facts list", ["facts", "list", *scoped, "--json"])
    cli.run("facts get", ["facts", "get", *VICTIM_FACT, *scoped])
    cli.run("search --namespace", ["search", BAIT, *scoped, "--explain", "--json"])
    cli.run("export namespace", ["export", "namespace", ns, "--format", "jsonl", "--out",
                                 str(cli.out / "ns.jsonl")], reads=[cli.out / "ns.jsonl"])
    if notes_export:
        cli.run("notes export", ["notes", "export", *scoped, "--out",
                                 str(cli.out / "notes.json")], reads=[cli.out / "notes.json"])
    cli.run("schedules list --user", ["schedules", "list", "--user", ns, "--json"])
    cli.run("sessions list --agent", ["sessions", "list", "--agent", ns, "--json"])
    cli.run("notes rm", ["notes", "rm", VICTIM_NOTE_NAME, *scoped, "--yes"], writes=True)
    cli.run("facts rm", ["facts", "rm", *VICTIM_FACT, *scoped, "--yes"], writes=True)


def _session_commands(cli: Commands, sid: str) -> None:
    """``--session`` and the session-named commands, given crafted ids (these commands are
    the developer's view of the whole file: the victim's exact id is not an attack)."""
    cli.run("search --session", ["search", BAIT, "--session", sid, "--explain", "--json"])
    cli.run("sessions show", ["sessions", "show", sid, "--json"])
    cli.run("scratchpad show", ["scratchpad", "show", sid, "--json"])
    cli.run("export session", ["export", "session", sid, "--format", "jsonl", "--out",
                               str(cli.out / "session.jsonl")], reads=[cli.out / "session.jsonl"])
    cli.run("scratchpad clear", ["scratchpad", "clear", sid], writes=True)
    cli.run("sessions rm", ["sessions", "rm", sid, "--yes"], writes=True)


def _reference_commands(cli: Commands, planted: Planted, thorough: bool) -> None:
    """The victim's note and schedule references, from the attacker's namespace (notes) or
    crafted (schedules: their commands name any user's schedule, as the developer does)."""
    names = [VICTIM_NOTE_NAME, VICTIM_NOTE_ALIAS, VICTIM_MEMORY_KEY, planted.archive_name]
    refs = [r for r in crafted_note_refs(planted.note_ids[0], names) if _cli_text(r)]
    scoped = ["--namespace", ATTACKER]
    for ref in spread(refs, 5, thorough):
        cli.run("notes show", ["notes", "show", *scoped, "--", ref])
        cli.run("notes rm", ["notes", "rm", *scoped, "--yes", "--", ref], writes=True)
        cli.run("notes rename", ["notes", "rename", *scoped, "--", ref, "mly-renamed"],
                writes=True)
        cli.run("notes edit", ["notes", "edit", *scoped, "--content", ATTACKER_MARK, "--", ref],
                writes=True)
    cli.run("notes alias", ["notes", "alias", VICTIM_NOTE_NAME, "mly-alias", *scoped],
            writes=True)
    cli.run("notes unalias", ["notes", "unalias", VICTIM_NOTE_ALIAS, *scoped], writes=True)
    exact = (planted.schedule_id, VICTIM_SCHEDULE_NAME)
    crafted = [r for r in crafted_schedule_refs(*exact) if r not in exact]
    for ref in spread(crafted, 4, thorough):
        cli.run("schedules show", ["schedules", "show", "--", ref])
        cli.run("schedules pause", ["schedules", "pause", "--", ref], writes=True)
        cli.run("schedules rm", ["schedules", "rm", "--", ref], writes=True)


def _log_and_imports(cli: Commands, planted: Planted, notes_import: bool) -> None:
    """The retrieval log filtered by crafted callers; imports that claim the victim's
    sessions, notes session, note ids and names."""
    for caller in ("%", "_", "' OR 1=1 --", "ap%", "API", "api "):
        cli.run("log --caller", ["log", "--caller", caller, "--json"])
    lines = [{"session_id": sid, "role": "user", "content": f"{ATTACKER_MARK} aurora"}
             for sid in (VICTIM_CHAT, VICTIM_CHAT + "%", "memory:" + VICTIM, VICTIM_CHAT.upper())]
    jsonl = cli.out / "claims.jsonl"
    jsonl.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    for ns in (ATTACKER, VICTIM + "%", VICTIM.upper(), VICTIM + " "):
        cli.run("import jsonl", ["import", "jsonl", str(jsonl), "--namespace", ns, "--json"],
                writes=True, given=[jsonl.read_text(encoding="utf-8")])
    if notes_import:
        notes = [{"note_id": note_id, "name": name, "content": f"{ATTACKER_MARK} aurora"}
                 for note_id, name in zip(planted.note_ids, [VICTIM_NOTE_NAME,
                                                             VICTIM_MEMORY_KEY], strict=False)]
        path = cli.out / "claims.json"
        path.write_text(json.dumps({"format": "memory-workbench-notes", "version": 1,
                                    "namespace": VICTIM, "notes": notes}), encoding="utf-8")
        for overwrite in ([], ["--overwrite"]):
            cli.run("notes import", ["notes", "import", str(path), "--namespace",
                                     ATTACKER_WRITER, *overwrite, "--json"], writes=True,
                    given=[path.read_text(encoding="utf-8")])
