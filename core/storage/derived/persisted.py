"""Derived indexes saved to files, so a new process maps them instead of building them.

A saved index is a folder of ``.npy`` arrays (mapped with ``np.load(mmap_mode=...)``: opening
one reads nothing until a query touches it) named by a small manifest, ``NAME.json``, beside
it. The manifest says what the arrays were built from and may be trusted for: the format,
a fingerprint (model, dimension, tokenizer, schema), the database's identity, the change-log
position the index is current to, and each array's shape, dtype, byte size and checksum.

Writes are atomic: the arrays go to a fresh folder, and only once they are written does
``os.replace`` put the new manifest (naming that folder) over the old one. A process killed
at any point leaves the old manifest and its folder, or the new ones, never a mix; folders
no manifest names are removed by the next save. One process saves an index at a time (an
advisory lock on ``.NAME.lock``, released by the kernel when its holder dies): another that
wants to meanwhile skips its save, so no save removes a folder another is still writing.
Loading refuses (returns None, saying why) anything that does not match: the caller then
builds from the database, so a bad file costs a build, never a wrong answer.

Nothing is fsynced. A copy is a cache that every load checks whole, so a power cut that
leaves a manifest naming arrays the disk never got costs a build, not a wrong answer, while
flushing made the saves at the end of a 1M-chunk import two to four times as long (both
indexes written one after the other: 2.1 s without, 4.0-7.9 s with, on this machine).

The checksum of every array is checked on load: xxh3 (64 bits), ~0.035 ms per MiB on a warm
page cache (~7 ms for 100k chunks' 196 MiB on PostgreSQL; CRC-32, which copies saved before
it still carry and which is still checked for them, took 29 ms), and it reads the pages the
first queries would read anyway.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import threading
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import xxhash

FORMAT = 2
CHECKERS = max(1, min(4, os.cpu_count() or 1))
_PAGE = 4096
_PAUSE_ENV = "WORKBENCH_INDEX_SAVE_PAUSE"
"""Tests only: a file that, when set, is created after the first array is written, and then
the writer waits for it to be removed (a test kills the process in between)."""


@dataclass
class Loaded:
    """A saved index that passed every check: its arrays (mapped) and its manifest."""

    arrays: dict[str, np.ndarray]
    position: Any
    """Where in the change log it is current to (a seq on SQLite, a snapshot on PostgreSQL)."""
    entry: Any
    """What else ties it to that log (the caller's, checked by the caller)."""
    meta: dict[str, Any]
    manifest: dict[str, Any]


@dataclass
class Saved:
    """What a folder holds for one index, for reports."""

    name: str
    bytes: int
    position: Any
    problem: str | None


def sqlite_folder(path: str | Path) -> Path:
    """Where a SQLite file's derived indexes are saved: ``FILE-index/`` beside it."""
    return Path(f"{path}-index")


def _bytes_of(array: np.ndarray) -> memoryview:
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8).data


def _checksum(array: np.ndarray) -> int:
    return xxhash.xxh3_64_intdigest(_bytes_of(array)) if array.size else 0


def _checks_out(array: np.ndarray, described: Mapping[str, Any]) -> bool:
    """Whether ``array`` holds the bytes its manifest entry was saved with (an xxh3 or,
    saved by an earlier version, a CRC-32)."""
    if "xxh3" in described:
        return _checksum(array) == int(described["xxh3"])
    if "crc32" in described:
        return (zlib.crc32(_bytes_of(array)) if array.size else 0) == int(described["crc32"])
    return False


def _first_corrupt(arrays: Mapping[str, np.ndarray],
                   described: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The first array (in manifest order) whose bytes are not what was saved, or None.

    The arrays are checked on :data:`CHECKERS` threads, largest first: the time goes to
    faulting the mapped pages in (~0.13 ms per MiB from the page cache, where the hash
    itself takes 0.035), which threads share out (the hash lets go of the GIL).
    """
    order = sorted(arrays, key=lambda key: -arrays[key].nbytes)
    with ThreadPoolExecutor(max_workers=CHECKERS) as pool:
        passed = dict(zip(order, pool.map(
            lambda key: _checks_out(arrays[key], described[key]), order), strict=True))
    return next((key for key in arrays if not passed[key]), None)


def _seal(manifest: dict[str, Any]) -> str:
    body = json.dumps({k: v for k, v in manifest.items() if k != "seal"}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def save(folder: Path, name: str, *, fingerprint: Mapping[str, Any], database: str,
         position: Any, entry: Any, meta: Mapping[str, Any],
         arrays: Mapping[str, np.ndarray]) -> int | None:
    """Write ``arrays`` and their manifest as index ``name`` in ``folder`` atomically;
    returns the bytes written, or None when another process is saving ``name`` (its copy
    will do)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _saving_lock(folder, name) as held:
        if not held:
            return None
        return _save(folder, name, {
            "format": FORMAT, "index": name, "fingerprint": dict(fingerprint),
            "database": database, "position": position, "entry": entry, "meta": dict(meta)},
            arrays)


@contextlib.contextmanager
def _saving_lock(folder: Path, name: str) -> Iterator[bool]:
    """Hold ``name``'s save lock inside (yields False, holding nothing, when another process
    holds it)."""
    fd = os.open(folder / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the lock


def _save(folder: Path, name: str, manifest: dict[str, Any],
          arrays: Mapping[str, np.ndarray]) -> int:
    """The save itself, under ``name``'s lock."""
    data = folder / f"{name}.{secrets.token_hex(6)}"
    data.mkdir()
    described: dict[str, Any] = {}
    written = 0
    for number, (key, array) in enumerate(arrays.items()):
        array = np.ascontiguousarray(array)
        target = data / f"{key}.npy"
        with open(target, "wb") as out:
            np.save(out, array, allow_pickle=False)
        size = target.stat().st_size
        written += size
        described[key] = {"shape": list(array.shape), "dtype": array.dtype.str,
                          "file_bytes": size, "xxh3": _checksum(array)}
        if number == 0:
            _pause_for_tests()
    manifest = {**manifest, "folder": data.name, "arrays": described}
    manifest["seal"] = _seal(manifest)
    staged = folder / f".{name}.json.{data.name}"
    staged.write_text(json.dumps(manifest))
    os.replace(staged, folder / f"{name}.json")
    _remove_unnamed(folder, name, data.name)
    return written


def load(folder: Path, name: str, *, fingerprint: Mapping[str, Any], database: str,
         mmap_mode: Literal["r", "c"] = "r") -> Loaded | str:
    """Index ``name`` from ``folder``, mapped, once every check passed; else why not."""
    found = _load(folder, name, fingerprint, database, mmap_mode)
    if isinstance(found, str) and found.endswith(_GONE):
        # A save replaced the manifest and removed the folder it named while this read it:
        # the new one is whole.
        found = _load(folder, name, fingerprint, database, mmap_mode)
    return found


_GONE = "(removed by a save meanwhile)"


def _load(folder: Path, name: str, fingerprint: Mapping[str, Any], database: str,
          mmap_mode: Literal["r", "c"]) -> Loaded | str:
    path = folder / f"{name}.json"
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        return "none saved"
    except (OSError, ValueError) as exc:
        return f"its manifest cannot be read ({exc})"
    if not isinstance(manifest, dict) or manifest.get("seal") != _seal(manifest):
        return "its manifest is damaged"
    if manifest.get("format") != FORMAT:
        return f"format {manifest.get('format')}, not {FORMAT}"
    if manifest.get("database") != database:
        return "saved from another database"
    if manifest.get("fingerprint") != dict(fingerprint):
        return f"built from something else ({_difference(manifest['fingerprint'], fingerprint)})"
    arrays = _taken_ahead(folder, name, manifest, mmap_mode)
    if arrays is None:
        arrays = _checked_arrays(folder, manifest, mmap_mode)
    if isinstance(arrays, str):
        return arrays
    return Loaded(arrays, manifest["position"], manifest.get("entry"),
                  dict(manifest.get("meta", {})), manifest)


def _checked_arrays(folder: Path, manifest: Mapping[str, Any],
                    mmap_mode: Literal["r", "c"]) -> dict[str, np.ndarray] | str:
    """The manifest's arrays, mapped, once each has the size, shape, dtype and checksum it
    was saved with; else what is wrong."""
    data = folder / str(manifest["folder"])
    arrays: dict[str, np.ndarray] = {}
    for key, described in manifest["arrays"].items():
        target = data / f"{key}.npy"
        try:
            if target.stat().st_size != described["file_bytes"]:
                return f"{key}.npy is {target.stat().st_size} bytes, not {described['file_bytes']}"
            array = np.load(target, mmap_mode=mmap_mode if described["shape"] and np.prod(
                described["shape"]) > 0 else None, allow_pickle=False)
        except FileNotFoundError as exc:
            return f"{key}.npy cannot be read ({exc}) {_GONE}"
        except (OSError, ValueError) as exc:
            return f"{key}.npy cannot be read ({exc})"
        if list(array.shape) != described["shape"] or array.dtype.str != described["dtype"]:
            return f"{key}.npy holds {array.dtype.str}{list(array.shape)}, not what was saved"
        # A plain ndarray over the same pages: numpy's memmap subclass costs every small
        # operation on it a few microseconds more (a query makes hundreds).
        arrays[key] = np.asarray(array)
    corrupt = _first_corrupt(arrays, manifest["arrays"])
    if corrupt is not None:
        return f"{corrupt}.npy is corrupt (checksum)"
    return arrays


# -- checking ahead ------------------------------------------------------------------------
#
# A process that will load saved copies can have their arrays checked before it knows it may
# use them (a PostgreSQL open spends ~65 ms importing its driver and connecting before the
# database's identity says which folder is its own): :func:`check_ahead` maps and checks them
# on a thread, and :func:`load` takes what was checked when the manifest it then reads is
# the one checked (same seal), after its own checks of format, database and fingerprint.

_Ahead = tuple[str, str, str]  # folder, index name, mmap mode
_ahead: dict[_Ahead, Future[tuple[str, dict[str, np.ndarray] | str]]] = {}
_ahead_until: dict[_Ahead, float] = {}  # when each is dropped unless loaded (monotonic)
_ahead_lock = threading.Lock()
_AHEAD_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="derived-check-ahead")
AHEAD_KEEP_S = 60.0
# One timer drops what was not loaded in time, armed for the first to go (a timer per call
# left a test process holding some 440 sleeping threads).
_forgetting: threading.Timer | None = None
_forgetting_at = 0.0


def check_ahead(folder: Path, names: Sequence[str], mmap_mode: Literal["r", "c"] = "r") -> None:
    """Start checking the saved ``names`` in ``folder`` on a thread of their own (what is
    not loaded within :data:`AHEAD_KEEP_S` is dropped)."""
    if not names:
        return
    until = time.monotonic() + AHEAD_KEEP_S
    with _ahead_lock:
        for name in names:
            key = (str(folder), name, mmap_mode)
            if key not in _ahead:
                _ahead[key] = _AHEAD_POOL.submit(_check_one, folder, name, mmap_mode)
            _ahead_until[key] = until
        _arm_forgetting()


def _arm_forgetting() -> None:
    """Have the timer run when the first entry is due (call it under ``_ahead_lock``)."""
    global _forgetting, _forgetting_at
    if not _ahead_until:
        return
    due = min(_ahead_until.values())
    if _forgetting is not None:
        if _forgetting_at <= due:
            return
        _forgetting.cancel()
    _forgetting, _forgetting_at = threading.Timer(max(0.0, due - time.monotonic()),
                                                  _forget_due), due
    _forgetting.daemon = True
    _forgetting.start()


def _forget_due() -> None:
    """Drop the entries past their time, and arm the timer for the next one."""
    global _forgetting
    with _ahead_lock:
        _forgetting = None
        now = time.monotonic()
        for key in [key for key, until in _ahead_until.items() if until <= now]:
            _ahead.pop(key, None)
            del _ahead_until[key]
        _arm_forgetting()


def _check_one(folder: Path, name: str,
               mmap_mode: Literal["r", "c"]) -> tuple[str, dict[str, np.ndarray] | str]:
    try:
        manifest = json.loads((folder / f"{name}.json").read_text())
        if not isinstance(manifest, dict) or manifest.get("seal") != _seal(manifest):
            return "", "its manifest is damaged"
        return str(manifest["seal"]), _checked_arrays(folder, manifest, mmap_mode)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return "", f"not checked ahead ({exc})"


def _taken_ahead(folder: Path, name: str, manifest: Mapping[str, Any],
                 mmap_mode: Literal["r", "c"]) -> dict[str, np.ndarray] | str | None:
    """What :func:`check_ahead` found for this very manifest (waiting for it when under
    way), or None when nothing was checked ahead for it."""
    with _ahead_lock:
        found = _ahead.pop((str(folder), name, mmap_mode), None)
        _ahead_until.pop((str(folder), name, mmap_mode), None)
    if found is None:
        return None
    seal, arrays = found.result()
    return arrays if seal == manifest.get("seal") and not isinstance(arrays, str) else None


def describe(folder: Path, name: str) -> Saved | None:
    """What is saved for ``name`` (its bytes and position), without checking the arrays;
    None when nothing is."""
    path = folder / f"{name}.json"
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text())
        total = sum(int(a["file_bytes"]) for a in manifest["arrays"].values())
        position = manifest["position"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Saved(name, 0, None, f"its manifest cannot be read ({exc})")
    problem = None if manifest.get("seal") == _seal(manifest) else "its manifest is damaged"
    return Saved(name, total + path.stat().st_size, position, problem)


def saved_meta(folder: Path, name: str) -> dict[str, Any] | None:
    """The ``meta`` a saved index's manifest carries (unchecked: for choosing what to load,
    never for trusting it); None when it cannot be read."""
    try:
        meta = json.loads((folder / f"{name}.json").read_text()).get("meta")
    except (OSError, ValueError, AttributeError):
        return None
    return meta if isinstance(meta, dict) else None


def folder_bytes(folder: Path) -> int:
    """Every byte under ``folder`` (0 when there is none)."""
    if not folder.exists():
        return 0
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _difference(saved: Mapping[str, Any], wanted: Mapping[str, Any]) -> str:
    keys = sorted(set(saved) | set(wanted))
    return ", ".join(f"{k}: {str(saved.get(k))[:40]} != {str(wanted.get(k))[:40]}"
                     for k in keys if saved.get(k) != wanted.get(k))


def _remove_unnamed(folder: Path, name: str, kept: str) -> None:
    """Folders and staged manifests of ``name`` other than ``kept``: earlier copies, or what
    a killed writer left (called under ``name``'s save lock: no other save is under way)."""
    for entry in folder.iterdir():
        if entry.name == kept:
            continue
        if entry.is_dir() and entry.name.startswith(f"{name}."):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.startswith(f".{name}.json."):
            with contextlib.suppress(OSError):
                entry.unlink()


def _pause_for_tests() -> None:
    flag = os.environ.get(_PAUSE_ENV)
    if not flag:
        return
    Path(flag).write_text(str(os.getpid()))
    deadline = time.monotonic() + 60
    while Path(flag).exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def touch(array: np.ndarray) -> None:
    """Fault a mapped array's pages into this process now, one byte a page (a load does
    it for what every query reads, so that the first query does not)."""
    if array.size and array.flags.c_contiguous:
        int(array.reshape(-1).view(np.uint8)[::_PAGE].sum())
