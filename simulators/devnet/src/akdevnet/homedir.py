"""Files in a devnet home that more than one process relies on.

- ``devnet.lock``: a running devnet holds an ``flock`` on it and writes its PID in it. The OS
  drops the lock when the process ends, however it ends (SIGKILL included), so a second
  devnet on the same home is refused at once and a crash never leaves a stale lock.
- ``endpoints.json``: the RPC and LCD URLs the running devnet listens on, and its PID. Tenant
  tools read it when no ``--node``/``--lcd`` is given; it is removed at exit, and a record
  whose PID is gone (a killed devnet) is ignored.
- key files: ``keys/<name>.json``, where a name may not leave the keys folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LOCK_FILE = "devnet.lock"
ENDPOINTS_FILE = "endpoints.json"
KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class HomeInUse(Exception):
    """Another devnet process runs on this home."""


class KeyNameError(ValueError):
    """A key name that is not a plain file name in the keys folder."""


# -- one devnet per home --------------------------------------------------------------------


@contextlib.contextmanager
def home_lock(home: Path) -> Iterator[None]:
    """Hold the home's lock while the block runs; ``HomeInUse`` names the holder's PID."""
    home.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
            raise HomeInUse(
                f"devnet home {home} is in use by another devnet (PID {holder}); "
                "stop it or choose another --home"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # closing the last descriptor releases the lock


# -- where the running devnet listens ------------------------------------------------------


@dataclass(frozen=True)
class Endpoints:
    rpc: str
    lcd: str
    pid: int


def write_endpoints(home: Path, rpc: str, lcd: str) -> None:
    """Record this process's RPC and LCD URLs (replaced in one step)."""
    partial = home / f".{ENDPOINTS_FILE}.{os.getpid()}"
    partial.write_text(json.dumps({"rpc": rpc, "lcd": lcd, "pid": os.getpid()}) + "\n")
    partial.replace(home / ENDPOINTS_FILE)


def clear_endpoints(home: Path) -> None:
    """Remove the record if it is this process's."""
    found = read_endpoints(home)
    if found is not None and found.pid == os.getpid():
        (home / ENDPOINTS_FILE).unlink(missing_ok=True)


def read_endpoints(home: Path) -> Endpoints | None:
    """The running devnet's URLs; ``None`` without a record or when its process is gone."""
    try:
        data = json.loads((home / ENDPOINTS_FILE).read_text())
        found = Endpoints(rpc=str(data["rpc"]), lcd=str(data["lcd"]), pid=int(data["pid"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return found if _alive(found.pid) else None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- key names ------------------------------------------------------------------------------


def check_key_name(name: str) -> str:
    """``name`` if it is a plain key name, else ``KeyNameError`` saying why."""
    if not name:
        reason = "it is empty"
    elif "/" in name or "\\" in name:
        reason = "it contains a path separator"
    elif ".." in name:
        reason = "it contains '..'"
    elif not KEY_NAME.fullmatch(name):
        reason = "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    else:
        return name
    raise KeyNameError(f"invalid key name {name!r}: {reason}")


def key_path(keys_dir: Path, name: str) -> Path:
    """The key file of ``name`` in ``keys_dir``."""
    return keys_dir / f"{check_key_name(name)}.json"
