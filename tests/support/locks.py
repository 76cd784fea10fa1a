"""This machine's locks that test sessions, their pytest workers and the tiers share (files in the cache)."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator

from tests.support import paths

_installs_lock_depth = 0  # this process holds the lock when > 0 (a second flock on a new file would wait for itself)


@contextlib.contextmanager
def installs_locked() -> Iterator[None]:
    """Holds this machine's lock of installs and uninstalls of the operator (a file lock: across pytest workers and
    test runs sharing the cluster). The users' aggregated roles and the CRDs' owner labels exist once per cluster, and
    the install tests compare them before and after: no other install may land in between. Reentrant in a process."""
    global _installs_lock_depth
    if _installs_lock_depth:
        _installs_lock_depth += 1
        try:
            yield
        finally:
            _installs_lock_depth -= 1
        return
    cache = paths.cache()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "install-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _installs_lock_depth = 1
        try:
            yield
        finally:
            _installs_lock_depth = 0
