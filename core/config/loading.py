"""From a TOML file, a dict or the environment to a validated ``Config``.

``${NAME}`` and ``${file:path}`` are filled before validation, and pydantic's errors become
one ``ConfigError`` holding one "dotted.key: what is wrong" clause per problem. A refusal
never quotes a secret field's value or text that came from ``${…}``, and the frames of a
refusal hold no interpolated value (a crash report prints every frame's variables).
"""

from __future__ import annotations

import os
import re
import tomllib
import typing
from pathlib import Path
from typing import Annotated, Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from core.config.sections import Config, section_model
from core.errors import ConfigError
from core.inputs import shown as _shown

CONFIG_ENV_VAR = "WORKBENCH_CONFIG"
_MAX_PROBLEMS = 12  # clauses in one refusal; the rest are counted


def load_config(source: str | os.PathLike[str] | typing.Mapping[str, Any] | Config | None = None,
                environ: typing.Mapping[str, str] | None = None) -> Config:
    """A validated Config from a TOML path, a dict, a Config, or the environment.

    With ``None`` the file named by ``$WORKBENCH_CONFIG`` is read when set, else defaults.
    """
    environ = _Environment(os.environ if environ is None else environ)
    if isinstance(source, Config):
        return source
    if source is None:
        env_path = environ.get(CONFIG_ENV_VAR)
        if not env_path:
            return Config()
        source = env_path
    folder = None
    if isinstance(source, str | os.PathLike):
        data = _read_toml(source)
        folder = Path(source).expanduser().absolute().parent
    elif isinstance(source, typing.Mapping):
        data = dict(source)
    else:
        raise ConfigError("a config is a TOML file's path, a dict or a Config; got "
                          f"{type(source).__name__}")
    checked = _validated(data, environ)
    if isinstance(checked, list):
        more = len(checked) - _MAX_PROBLEMS
        raise ConfigError("; ".join(checked[:_MAX_PROBLEMS])
                          + (f"; and {more} more problems" if more > 0 else ""))
    return checked if folder is None else _model_from_folder(checked, folder)


def _model_from_folder(config: Config, folder: Path) -> Config:
    """The config with a relative ``embedding.model`` folder read from the config file's
    ``folder``, not the current one, so the file means the same wherever a command runs.

    A model named ``./x`` or ``../x``, or one that is a folder beside the config file, is a
    folder; anything else (``minishlab/potion-base-8M``) stays a hub id."""
    model = config.embedding.model
    if (config.embedding.backend != "model2vec" or not model
            or Path(model).expanduser().is_absolute()):
        return config
    beside = folder / model
    if not (model.startswith(("./", "../")) or beside.is_dir()):
        return config
    embedding = config.embedding.model_copy(update={"model": str(beside.resolve())})
    return config.model_copy(update={"embedding": embedding})


def _validated(data: typing.Mapping[Any, Any],
               environ: typing.Mapping[str, str]) -> Config | list[str]:
    """The Config, or every problem found. The caller raises: this frame's variables hold
    the interpolated values, and a crash report that prints the refusal's frames would
    print any key among them."""
    filled = _interpolated(data, environ)
    try:
        config = Config.model_validate(filled.data)
    except ValidationError as exc:
        return filled.problems + _problems(exc, filled.raw)
    return filled.problems or config


def _read_toml(source: str | os.PathLike[str]) -> dict[str, Any]:
    """The TOML file's tables, or a ConfigError that says why it cannot be read."""
    try:
        path = Path(source).expanduser()
    except RuntimeError:  # ~name of a user this machine does not know
        raise ConfigError(f"config file {_shown(str(source))}: no home directory for "
                          "its ~user") from None
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        exc.__traceback__ = None  # its frames hold the file's text, any key in it too
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise ConfigError(f"config file {path} nests arrays or tables too deeply") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except ValueError as exc:  # a NUL or a lone surrogate in the path
        raise ConfigError(f"cannot read config file {_shown(str(path))}: {exc}") from None


# --- ${…} interpolation --------------------------------------------------------------------

_ENV_PATTERN = re.compile(r"\$\{([^}]+)\}")


class _Environment(typing.Mapping[str, str]):
    """The environment ``${…}`` reads, shown as its size only: a crash report that prints
    each frame's variables would otherwise print every key kept in the environment."""

    def __init__(self, values: typing.Mapping[str, str]) -> None:
        self._values = values

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __iter__(self) -> typing.Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"<environment: {len(self._values)} variables, not shown>"


def _interpolate(value: str, key: str, environ: typing.Mapping[str, str]) -> str:
    """``value`` with each ``${NAME}`` / ``${file:path}`` replaced; ``ConfigError`` naming
    the variable or file (never its value) when one cannot be read."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        if name.startswith("file:"):
            path = Path(os.path.expanduser(name[5:]))
            try:
                return path.read_text(encoding="utf-8").strip()
            except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
                reason = getattr(exc, "strerror", None) or str(exc)
                raise ConfigError(f"{key}: cannot read {path!r} ({reason})") from None
        if name not in environ:
            shown = name if name.isprintable() and len(name) <= 60 else _shown(name)
            raise ConfigError(f"{key}: environment variable {shown} is not set")
        return environ[name]

    return _ENV_PATTERN.sub(replace, value)


def _from_env_text(text: str, annotation: Any) -> Any:
    """An interpolated value read as its field's type, so "${DIMS}" can fill an int."""
    allowed = [typing.get_args(a)[0] if typing.get_origin(a) is Annotated else a
               for a in typing.get_args(annotation) or (annotation,)]
    if bool in allowed and text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    for kind in (int, float):
        if kind in allowed:
            try:
                return kind(text.strip())
            except ValueError:
                pass
    return text


class _Interpolated(typing.NamedTuple):
    data: dict[Any, Any]
    raw: dict[str, str]  # dotted key -> the text before interpolation, quoted in refusals
    problems: list[str]


def _interpolated(data: typing.Mapping[Any, Any], environ: typing.Mapping[str, str]
                  ) -> _Interpolated:
    """A copy of ``data`` with ``${…}`` filled in the known fields' strings.

    A value that cannot be filled is left out of the copy and its problem kept, so the
    refusal names the variable instead of the type of the text that was not replaced.
    """
    raw: dict[str, str] = {}
    problems: list[str] = []

    def fill(values: typing.Mapping[Any, Any], fields: dict[str, FieldInfo],
             prefix: str) -> dict[Any, Any]:
        filled: dict[Any, Any] = {}
        for name, value in values.items():
            field = fields.get(name) if isinstance(name, str) else None
            key = f"{prefix}{name}"
            section = section_model(field) if field is not None else None
            if section is not None and isinstance(value, typing.Mapping):
                filled[name] = fill(value, section.model_fields, f"{key}.")
            elif field is not None and isinstance(value, str) and _ENV_PATTERN.search(value):
                try:
                    filled[name] = _from_env_text(_interpolate(value, key, environ),
                                                  field.annotation)
                    raw[key] = value
                except ConfigError as exc:
                    problems.append(str(exc))
            else:
                filled[name] = value
        return filled

    return _Interpolated(fill(data, Config.model_fields, ""), raw, problems)


# --- pydantic's errors as one line per problem ---------------------------------------------

_TYPE_NAMES = {"int_type": "int", "int_parsing": "int", "int_from_float": "int",
               "float_type": "float", "float_parsing": "float", "bool_type": "bool",
               "bool_parsing": "bool", "string_type": "str"}
_BOUNDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
# Own errors whose message does not quote the value, safe to show for a secret too.
_UNQUOTED = {"duration_not_positive", "synchronous", "overlap", "target_ratio",
             "location"}


def _field_at(location: tuple[int | str, ...]) -> FieldInfo | None:
    """The field a validation error's location points at, when it is a known one."""
    fields: dict[str, FieldInfo] = Config.model_fields
    field = None
    for part in location:
        if not isinstance(part, str) or part not in fields:
            return None
        field = fields[part]
        section = section_model(field)
        fields = section.model_fields if section is not None else {}
    return field


def _bounds(field: FieldInfo | None) -> str:
    """A field's bounds in words: "at least 1", "from 0 to 16", "above 0 and at most 1"."""
    lower = upper = None
    for bound in field.metadata if field is not None else ():
        if getattr(bound, "ge", None) is not None:
            lower = ("ge", bound.ge)
        elif getattr(bound, "gt", None) is not None:
            lower = ("gt", bound.gt)
        elif getattr(bound, "le", None) is not None:
            upper = ("le", bound.le)
        elif getattr(bound, "lt", None) is not None:
            upper = ("lt", bound.lt)
    if lower and upper and lower[0] == "ge" and upper[0] == "le":
        return f"from {lower[1]} to {upper[1]}"
    words = {"ge": "at least", "gt": "above", "le": "at most", "lt": "below"}
    return " and ".join(f"{words[bound[0]]} {bound[1]}" for bound in (lower, upper) if bound)


def _unknown_keys(location: tuple[int | str, ...], names: list[Any]) -> str:
    section = _field_at(location)
    model = section_model(section) if section is not None else Config
    known = sorted(model.model_fields) if model is not None else []
    where = f"[{'.'.join(map(str, location))}]" if location else "the top level"
    names = sorted(names, key=str)
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return (f"unknown key{'s' if len(names) > 1 else ''} "
            f"{', '.join(_shown(name, 40) for name in names[:5])}{more} in {where}; "
            f"known keys: {', '.join(known)}")


def _problem(error: ErrorDetails, raw: dict[str, str]) -> str:
    """One validation error as "dotted.key: what is wrong", quoting no secret."""
    location, kind, value = error["loc"], error["type"], error["input"]
    key = ".".join(map(str, location))
    if kind == "model_type":
        return f"[{key}]: expected a table, got {type(value).__name__}"
    field = _field_at(location)
    if kind in _BOUNDS:
        return f"{key}: must be {_bounds(field)}"
    if kind in _UNQUOTED:
        return f"{key}: {error['msg']}"
    hidden = key in raw or (field is not None and not field.repr)
    if kind == "int64_range":
        return f"{key}: {'' if hidden else _shown(value) + ' '}{error['msg']}"
    if hidden:
        # A secret, or text from ${…} (which may be a key put in the wrong field).
        source = (f"the value of {_shown(raw[key], 80)}" if key in raw
                  else f"the {type(value).__name__} given")
        expected = _TYPE_NAMES.get(kind, "one of the allowed values")
        if kind == "duration":
            expected = 'a duration like "24h"'
        elif kind == "literal_error":
            expected = error.get("ctx", {}).get("expected", expected)
        return (f"{key}: expected {expected}, but {source} is not one (not shown: it may be "
                "a secret)")
    if kind == "float_type" and isinstance(value, int) and not isinstance(value, bool):
        return f"{key}: {_shown(value)} is too large"
    if kind in _TYPE_NAMES:
        return f"{key}: expected {_TYPE_NAMES[kind]}, got {type(value).__name__} {_shown(value)}"
    if kind == "finite_number":
        return f"{key}: must be a finite number, got {value!r}"
    if kind == "literal_error":
        return f"{key}: {_shown(value)} is not one of {error.get('ctx', {}).get('expected')}"
    return f"{key}: {error['msg']}"


def _problems(exc: ValidationError, raw: dict[str, str]) -> list[str]:
    """Every problem of a ValidationError, unknown keys grouped by section."""
    unknown: dict[tuple[int | str, ...], list[Any]] = {}
    problems = []
    for error in exc.errors(include_url=False):
        if error["type"] in ("extra_forbidden", "invalid_key"):
            unknown.setdefault(tuple(error["loc"][:-1]), []).append(error["loc"][-1])
        else:
            problems.append(_problem(error, raw))
    return [_unknown_keys(where, names) for where, names in unknown.items()] + problems
