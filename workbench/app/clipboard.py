"""Copying as JSON: pyperclip first, the terminal's OSC 52 as well, and plain words when
there is no clipboard to copy to. The JSON itself is :func:`workbench.text.to_json`, which
the CLI prints too."""

from __future__ import annotations


def copy_text(text: str) -> str | None:
    """Put ``text`` on the system clipboard; None when done, else why it could not be."""
    try:
        import pyperclip

        pyperclip.copy(text)
    except Exception as exc:  # pyperclip raises its own exception or OSError per platform
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"no system clipboard here ({reason[:120]})"
    return None
