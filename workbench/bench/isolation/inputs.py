"""The crafted inputs: ids, namespaces, queries, tags and references an attacker tries.

Each list is built from what the attacker is assumed to know: the victim's namespace and
session ids, note ids, schedule ids and names, and the tokens and prefixes that mark the
victim's rows in ``chunks_fts`` (they are hashes of the ids, so anyone can compute them).
What the attacker never types is the content: that is what the markers detect.
"""

from __future__ import annotations

from core.storage.fts_rows import session_prefix
from core.storage.vocabulary import agent_token_for, memory_session_id, scope_token_for

# Letters that look like Latin ones: Cyrillic i, a, c, e, o; and fullwidth forms.
_LOOK_ALIKE = str.maketrans({"i": "\u0456", "a": "\u0430", "c": "\u0441", "e": "\u0435",
                             "o": "\u043e"})


def look_alike(text: str) -> str:
    """``text`` with Latin letters swapped for Cyrillic ones that look the same."""
    return text.translate(_LOOK_ALIKE)


def fullwidth(text: str) -> str:
    """``text`` in fullwidth forms (``ｖｉｃ``)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _distinct(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def crafted_names(target: str) -> list[str]:
    """Names that are not ``target`` but try to reach it: SQL LIKE wildcards and escapes,
    quotes and injections, case, spaces, invisible and look-alike characters, NUL, length."""
    return _distinct([crafted for crafted in [
        target + "%", "%", "_", "%%", target[:-1] + "_", "_" * len(target), "\\",
        target + "\\", target[:2] + "\\%", "'", '"', "' OR 1=1 --", "' OR '1'='1",
        target + "' OR '1'='1", '") OR 1=1 --', target + "*", "*", target.upper(),
        target.title(), target + " ", " " + target, target + "\t", target + "\n",
        target + "\u200b", look_alike(target), fullwidth(target), target + "\x00",
        "\x00" + target, target + "\x00x", target * 40, "x" * 5000, "$.note_id", "$[0]",
        '"]', "NEAR(" + target + ")", "../" + target, target + "/../" + target,
        "./" + target, target.replace("-", "/"), "\ud800" + target,
    ] if crafted != target])


def crafted_sessions(session_id: str, namespace: str) -> list[str]:
    """Session ids aimed at ``session_id`` and at the namespace's memory session."""
    memory = memory_session_id(namespace)
    return _distinct([
        *crafted_names(session_id), memory, "memory:%", "memory:_", memory + "%",
        memory.upper(), "memory:" + namespace.upper(), memory + " ", "memory:" + look_alike(
            namespace), "memory:", "memory:\x00",
    ])


def crafted_namespaces(namespace: str) -> list[str]:
    """Namespaces aimed at ``namespace`` (and ``memory:`` forms of it)."""
    return _distinct([*crafted_names(namespace), "memory:" + namespace, "memory:%", ""])


def fts_queries(victim_session: str, victim_namespace: str, bait: str) -> list[str]:
    """Queries in FTS5 syntax, with the columns of ``chunks_fts`` named, and the victim's
    scope tokens and session prefixes forged into them (they are hashes of known ids)."""
    token = scope_token_for(victim_session)
    agent = agent_token_for(victim_namespace)
    prefixes = [session_prefix(victim_session),
                session_prefix(memory_session_id(victim_namespace))]
    forged = []
    for prefix in prefixes:
        forged += [f"{prefix}{bait}", f"{prefix}*", f"session_text: {prefix}{bait}",
                   f"{{session_text session_context}} : {prefix}*",
                   f"session_context : {prefix}*", f'"{prefix}{bait}" OR {prefix}*']
    return _distinct([
        bait, bait + "*", "*", '"', '""', '"' + bait, "^" + bait, "-" + bait, "- " + bait,
        f"{bait} -x", f"NEAR({bait} x)", f"NEAR({bait} x, 50)", f"{bait} OR x",
        f"{bait} AND NOT x", f"{bait} NOT x", f"({bait}", f"{bait})", f")) OR (({bait}",
        f"chunk_text: {bait}", f"context: {bait}", f"scope_token: {bait}",
        f"session_text: {bait}", f"session_context: {bait}",
        f"{{chunk_text scope_token context session_text session_context}} : {bait}",
        "rowid: 1", f"chunks_fts: {bait}", f"scope_token: {token}", f'scope_token : "{token}"',
        f"scope_token: {agent}", token, agent, f"{token} OR {agent}",
        f"{bait}) OR (scope_token: {agent}", f"{bait}) OR scope_token : ({token}",
        f"{{scope_token}} : {agent} OR {token}", *forged, "%", "_", f"%{bait}%", "\\",
        "' OR 1=1 --", memory_session_id(victim_namespace), victim_session, "\x00",
        bait + "\x00", "hxq", "hxq*", "hxq%", '"hxq" *', "$.note_id", "$[0]", '"]',
        bait + " " + "x" * 5000, "\U0001f600 " + bait, "",
    ])


def crafted_tags(victim_tag: str) -> list[list[str]]:
    """Tag filters that are JSON paths, LIKE patterns and injections (and the victim's own
    tag, which must still find only the attacker's chunks)."""
    return [[t] for t in ("$", "$.note_id", "$[0]", '"]', "*", "%", "_", victim_tag + "%",
                          victim_tag[:-1] + "_", "' OR 1=1 --", "$.tags", "$.tags[0]",
                          '") OR 1=1 --', victim_tag, "\\", "x" * 65, "$.tags[*]",
                          "json_each", "null")] + [["shared", "%"], [f"t{n}" for n in range(17)]]


def crafted_note_refs(note_id: str, names: list[str]) -> list[str]:
    """References to a victim's note: its id and id-like shapes, its names and aliases,
    and wildcard or altered forms of them."""
    refs = [note_id, note_id.upper(), note_id + " ", " " + note_id, note_id[:-1] + "_",
            note_id[:13] + "%", "note-%", note_id + "\x00", note_id.replace("-", "_")]
    for name in names:
        refs += [name, name + "%", name[:-1] + "_", name.upper(), name + " ",
                 look_alike(name), name + "\u200b"]
    return _distinct([*refs, "%", "_", "' OR 1=1 --", "*"])


def crafted_schedule_refs(schedule_id: str, name: str) -> list[str]:
    """References to a victim's schedule: its id and name, and altered forms of them."""
    return _distinct([schedule_id, name, schedule_id.upper(), schedule_id + " ",
                      schedule_id[:-1] + "_", schedule_id[:9] + "%", name + "%",
                      name[:-1] + "_", name.upper(), "%", "_", "' OR 1=1 --", "*"])
