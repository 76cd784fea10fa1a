"""Polling, for the dev tools (bench, chaos): wait until a predicate holds, or raise TimeoutError naming what."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(pred: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """The predicate's first truthy value."""
    end = time.monotonic() + timeout
    while not (value := pred()):
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
    return value
