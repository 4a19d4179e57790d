"""The playground's small drawings as Textual ``Content``: score bars, movement marks,
grades and highlighted text.

Colours are theme variables (``$vector-leg``, ``$fts-leg``, ``$success`` …), so a theme
file recolours every bar; the widgets that show these pieces resolve them when they render.
"""

from __future__ import annotations

from textual.content import Content

from core.retrieval.search import matched_spans

VECTOR = "$vector-leg"
FTS = "$fts-leg"
HIGHLIGHT = "bold underline $fts-leg"
"""Matched query terms: the full-text leg's colour, since they are what it matched."""
TRACK = "$foreground 18%"
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, width: int, style: str) -> Content:
    """A horizontal bar ``width`` cells long filled to ``value`` (0..1) in eighths of a
    cell, on a faint track so an empty bar still shows its length."""
    value = min(1.0, max(0.0, value))
    eighths = round(value * width * 8)
    full, part = divmod(eighths, 8)
    filled = "█" * full + (_EIGHTHS[part] if part else "")
    return Content.assemble((filled, style), ("·" * (width - len(filled)), TRACK))


def leg_cell(normalised: float, rank: int | None, width: int, style: str,
             label: str | None = None, *, numbers: bool = True) -> Content:
    """One leg of a result: its normalised score as a bar, the score and the leg's rank.

    A leg that did not return the chunk shows an empty track and a dash for the rank, so
    the eye sees at once which leg found it. Without ``numbers`` the score is left to the
    bar (the compact rows of A | B).
    """
    parts: list[Content | tuple[str, str] | str] = []
    if label:
        parts.append((f"{label} ", style))
    parts.append(bar(normalised, width, style))
    if numbers:
        parts.append((f" {normalised:4.2f}", style) if rank is not None
                     else ("    –", "$text-muted"))
    parts.append((f" #{rank:<2}", "bold " + style) if rank is not None
                 else ("  – ", "$text-muted"))
    return Content.assemble(*parts)


def movement(move: int | None, known: bool = True) -> Content:
    """How a chunk moved since the ranking it is compared with: ↑2, ↓1, new, or nothing."""
    if not known:
        return Content("    ")
    if move is None:
        return Content.styled("new ", "bold $accent")
    if move > 0:
        return Content.styled(f"↑{move:<3}", "bold $success")
    if move < 0:
        return Content.styled(f"↓{-move:<3}", "bold $error")
    return Content.styled("·   ", "$text-muted")


def grade_mark(grade: int | None) -> Content:
    """A judged chunk's grade: ✓1..✓3 relevant, ✗ judged not relevant, blank unjudged."""
    if grade is None:
        return Content("  ")
    if grade >= 1:
        return Content.styled(f"✓{grade}", "bold $success")
    return Content.styled("✗ ", "$text-muted")


def highlighted(text: str, terms: list[str], limit: int) -> Content:
    """``text`` on one line (its line breaks become spaces), cut to ``limit`` characters,
    with the words the query's terms match highlighted."""
    flat = " ".join(part.strip() for part in text.strip().splitlines() if part.strip())
    content = Content(flat)
    for start, end in matched_spans(terms, flat):
        content = content.stylize(HIGHLIGHT, start, end)
    if len(flat) > limit:
        content = content[: limit - 1] + Content.styled("…", "$text-muted")
    return content


def metric_bar(name: str, value: float, width: int, style: str) -> Content:
    """A labelled metric as a bar and a number: ``recall@10  ██████···  0.50``."""
    return Content.assemble((f"{name:<10}", "bold"), bar(value, width, style),
                            (f" {value:4.2f}", style))
