"""Polling: the one way a test waits for the world to get somewhere."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


def wait_for(predicate: Callable[[], _T], timeout: float, interval: float = 0.2, what: str = "") -> _T:
    """Poll predicate until it returns something truthy and return that; fail the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for {what or getattr(predicate, '__name__', 'condition')}"
            )
        time.sleep(interval)
