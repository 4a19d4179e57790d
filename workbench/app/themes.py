"""Themes: Textual's built-ins, the project's own (``themes/*.toml``) and the user's.

A theme file is TOML with Textual ``Theme`` fields: ``name`` and ``primary`` are required;
``secondary``, ``accent``, ``warning``, ``error``, ``success``, ``foreground``,
``background``, ``surface``, ``panel``, ``boost`` are colours; ``dark`` is a boolean;
``[variables]`` holds extra CSS variables. Unknown keys and unparsable colours are
refused, every problem of every file reported at once, and a bad file never stops the app.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from textual.color import Color, ColorParseError
from textual.theme import Theme

PROJECT_THEMES = Path(__file__).resolve().parents[2] / "themes"
COLOUR_KEYS = ("primary", "secondary", "accent", "warning", "error", "success", "foreground",
               "background", "surface", "panel", "boost")
OTHER_KEYS = ("name", "dark", "variables", "luminosity_spread", "text_alpha")
DEFAULT_THEME = "workbench-dusk"


def user_theme_dir() -> Path:
    """Where the user's theme files live: ``$WORKBENCH_THEMES`` or the XDG config folder."""
    if os.environ.get("WORKBENCH_THEMES"):
        return Path(os.environ["WORKBENCH_THEMES"]).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "memory-workbench" / "themes"


@dataclass
class LoadedThemes:
    """The themes read from a set of folders, and what was wrong with the rest."""

    themes: list[Theme] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def load_theme_dirs(*folders: Path) -> LoadedThemes:
    """Every ``*.toml`` theme in ``folders`` (missing folders are skipped), in name order."""
    loaded = LoadedThemes()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            theme, problems = parse_theme_file(path)
            loaded.problems.extend(f"{path.name}: {problem}" for problem in problems)
            if theme is not None:
                loaded.themes.append(theme)
    return loaded


def parse_theme_file(path: Path) -> tuple[Theme | None, list[str]]:
    """A theme file as a ``Theme``, or None and every reason it is not one."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return None, [f"not readable TOML ({exc})"]
    return parse_theme(data)


def parse_theme(data: dict[str, object]) -> tuple[Theme | None, list[str]]:
    """A theme's fields checked one by one; all problems, not just the first."""
    problems = [f"unknown key {key!r}" for key in data
                if key not in COLOUR_KEYS and key not in OTHER_KEYS]
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append("'name' is required (a non-empty string)")
    if "primary" not in data:
        problems.append("'primary' is required (a colour)")
    colours: dict[str, str] = {}
    for key in COLOUR_KEYS:
        if key not in data:
            continue
        value = data[key]
        try:
            if not isinstance(value, str):
                raise ColorParseError(f"{value!r} is not a string", None)
            Color.parse(value)
            colours[key] = value
        except ColorParseError:
            problems.append(f"{key} = {value!r} is not a colour (try '#3b82f6' or 'ansi_blue')")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        problems.append(f"dark = {dark!r} must be true or false")
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in variables.items()):
        problems.append("[variables] must map names to strings")
    if problems:
        return None, problems
    assert isinstance(name, str) and isinstance(variables, dict) and isinstance(dark, bool)
    return Theme(name=name.strip(), dark=dark, variables=dict(variables),
                 **cast(dict[str, Any], colours)), []
