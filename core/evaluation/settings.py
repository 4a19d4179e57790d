"""Settings to compare or tune: dotted overrides of a Config, grids of them, and writing one.

One syntax everywhere: ``section.key=value`` (``retrieval.vector_weight=0.3``), the value
read as a TOML value where it is one (``0.3``, ``true``, ``"rrf"``) and as a bare string
otherwise (``retrieval.fusion=rrf``). A side of a comparison is a TOML file laid over the
current config, or such assignments separated by spaces, or ``current``. A grid axis is
``retrieval.key=a,b,c``; a boolean or a choice field may leave its values out
(``retrieval.fusion`` tries every fusion), so options added to ``RetrievalConfig`` are
tunable without code here. Setting ``retrieval.vector_weight`` alone sets
``retrieval.fts_weight`` to 1 minus it, as ``workbench eval --vector-weight`` does.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tomllib
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.config.sections import Config, RetrievalConfig
from core.errors import ConfigError, InvalidInput

Overrides = dict[str, Any]
"""Dotted key (``retrieval.vector_weight``) -> value."""

_ASSIGNMENT = re.compile(r"^([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)=(.*)$", re.DOTALL)
# Settings that are not retrieval options, so never part of a grid.
_NOT_TUNABLE = frozenset({"log_enabled", "top_k"})


def parse_value(raw: str) -> Any:
    """A TOML value (number, boolean, quoted string, array), else the text as a string."""
    try:
        return tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return raw.strip()


def parse_assignment(text: str) -> tuple[str, Any]:
    """``section.key=value`` -> ``("section.key", value)``."""
    match = _ASSIGNMENT.match(text.strip())
    if match is None:
        raise InvalidInput(f"{text!r} is not a setting: write section.key=value, e.g. "
                           "retrieval.vector_weight=0.3")
    return f"{match[1]}.{match[2]}", parse_value(match[3])


def parse_side(text: str) -> Overrides:
    """One side of a comparison: ``current``, a TOML file, or space-separated assignments."""
    stripped = text.strip()
    if stripped in ("", "current"):
        return {}
    if "=" not in stripped.split()[0]:
        return read_settings_file(stripped)
    return dict(parse_assignment(part) for part in stripped.split())


def read_settings_file(path: str | os.PathLike[str]) -> Overrides:
    """A TOML config file's settings as dotted overrides (each ``[section]``'s keys)."""
    try:
        with Path(path).expanduser().open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such config file (nor section.key=value settings)"
                           ) from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read it as TOML: {exc}") from None
    overrides: Overrides = {}
    for section, table in data.items():
        if not isinstance(table, dict):
            raise InvalidInput(f"{path}: {section} is not a [section] table")
        for key, value in table.items():
            overrides[f"{section}.{key}"] = value
    return overrides


def with_implied(overrides: Mapping[str, Any]) -> Overrides:
    """The overrides plus what they imply: a vector weight alone sets the full-text one."""
    full = dict(overrides)
    weight = full.get("retrieval.vector_weight")
    if ("retrieval.fts_weight" not in full and isinstance(weight, int | float)
            and not isinstance(weight, bool) and 0.0 <= weight <= 1.0):
        full["retrieval.fts_weight"] = round(1.0 - weight, 6)
    return full


def apply_overrides(config: Config, overrides: Mapping[str, Any]) -> Config:
    """``config`` with the overrides set and validated; ``ConfigError`` names a bad key."""
    if not overrides:
        return config
    data = config.model_dump()
    for dotted, value in with_implied(overrides).items():
        section, _, key = dotted.partition(".")
        if section not in data or not isinstance(data[section], dict):
            raise ConfigError(f"{dotted}: no config section {section!r}")
        data[section][key] = value
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = [".".join(str(part) for part in error["loc"]) + ": " + error["msg"]
                    for error in exc.errors()]
        raise ConfigError("; ".join(problems)) from None


def describe(overrides: Mapping[str, Any]) -> str:
    """``vector_weight=0.3 fusion=rrf`` (the section left out for retrieval), or "current"."""
    if not overrides:
        return "current"
    return " ".join(f"{k.removeprefix('retrieval.')}={_shown(v)}" for k, v in overrides.items())


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# --- grids ---------------------------------------------------------------------------------

def tunable_fields() -> dict[str, Any]:
    """``RetrievalConfig``'s options a grid may vary: name -> annotation."""
    return {name: field.annotation for name, field in RetrievalConfig.model_fields.items()
            if name not in _NOT_TUNABLE}


def field_choices(name: str) -> tuple[Any, ...] | None:
    """Every value of a boolean or a choice (Literal) retrieval option; None for others."""
    annotation = tunable_fields().get(name)
    if annotation is bool:
        return (False, True)
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    return None


def parse_axis(text: str) -> tuple[str, tuple[Any, ...]]:
    """``retrieval.key=a,b`` (or ``retrieval.key`` for a boolean or a choice) -> its values."""
    key, _, raw = text.strip().partition("=")
    section, _, name = key.partition(".")
    if section != "retrieval" or name not in tunable_fields():
        known = ", ".join(sorted(tunable_fields()))
        raise InvalidInput(f"{key!r}: a grid varies a retrieval option (retrieval.NAME), one "
                           f"of: {known}")
    if not raw:
        choices = field_choices(name)
        if choices is None:
            raise InvalidInput(f"{key}: give its values, e.g. {key}=0.2,0.5")
        return key, choices
    values = tuple(parse_value(part) for part in raw.split(","))
    apply_overrides(Config(), {key: values[0]})  # refuses a wrong type by name
    for value in values[1:]:
        apply_overrides(Config(), {key: value})
    return key, values


def default_axes(fusions: Sequence[str] | None = None,
                 weights: Sequence[float] | None = None) -> list[tuple[str, tuple[Any, ...]]]:
    """Vector weight 0.0-1.0 (full text 1 minus it) x every fusion (or the given ones)."""
    from core.evaluation.runner import SWEEP_WEIGHTS

    fusion_choices = field_choices("fusion") or ()
    return [("retrieval.fusion", tuple(fusions) if fusions else fusion_choices),
            ("retrieval.vector_weight", tuple(weights) if weights else SWEEP_WEIGHTS)]


def grid_points(axes: Sequence[tuple[str, Sequence[Any]]]) -> list[Overrides]:
    """Every combination of the axes' values, the first axis varying slowest."""
    keys = [key for key, _ in axes]
    return [dict(zip(keys, values, strict=True))
            for values in itertools.product(*(values for _, values in axes))]


# --- writing a setting into a config file ----------------------------------------------------

def write_settings(path: str | os.PathLike[str], overrides: Mapping[str, Any]) -> None:
    """Set ``overrides`` in the TOML file at ``path``, keeping every other line as written.

    Each key is replaced in place in its ``[section]`` (or added at the section's end; the
    section at the file's end when it has none). A file that sets a section some other
    way (dotted keys, an inline table) is refused rather than rewritten.
    """
    target = Path(path).expanduser()
    text = target.read_text(encoding="utf-8") if target.exists() else ""
    lines = text.splitlines()
    by_section: dict[str, dict[str, Any]] = {}
    for dotted, value in with_implied(overrides).items():
        section, _, key = dotted.partition(".")
        by_section.setdefault(section, {})[key] = value
    for section, values in by_section.items():
        lines = _set_in_section(lines, section, values, target)
    updated = "\n".join(lines) + "\n"
    written = tomllib.loads(updated)  # what we wrote reads back as what was asked
    for section, values in by_section.items():
        for key, value in values.items():
            if written.get(section, {}).get(key) != value:
                raise ConfigError(f"{target}: could not set {section}.{key}; edit it by hand")
    partial = target.with_name(target.name + ".partial")
    partial.write_text(updated, encoding="utf-8")
    partial.replace(target)


def _set_in_section(lines: list[str], section: str, values: Mapping[str, Any],
                    target: Path) -> list[str]:
    header = re.compile(r"^\s*\[\s*" + re.escape(section) + r"\s*\]\s*(#.*)?$")
    if any(re.match(r"^\s*" + re.escape(section) + r"\s*[.=]", line) for line in lines):
        raise ConfigError(f"{target} sets [{section}] with dotted keys or an inline table; "
                          "write the setting by hand")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        if lines and lines[-1].strip():
            lines.append("")
        return [*lines, f"[{section}]", *(f"{k} = {_toml(v)}" for k, v in values.items())]
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].lstrip().startswith("[")), len(lines))
    body = lines[start + 1:end]
    pending = dict(values)
    for index, line in enumerate(body):
        match = re.match(r"^\s*([A-Za-z0-9_-]+)\s*=", line)
        if match and match[1] in pending:
            body[index] = f"{match[1]} = {_toml(pending.pop(match[1]))}"
    # New keys go after the section's last setting, before the blank lines that close it.
    last = max((i for i, line in enumerate(body) if line.strip()), default=-1)
    body[last + 1:last + 1] = [f"{k} = {_toml(v)}" for k, v in pending.items()]
    return [*lines[:start + 1], *body, *lines[end:]]


def _toml(value: Any) -> str:
    """A scalar (or a list of scalars) as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise ConfigError(f"cannot write {value!r} as a TOML value")
