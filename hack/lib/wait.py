"""Polling: the one way a tool or a test waits for the world to get somewhere."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(pred: Callable[[], T], timeout: float, what: str = "", *, interval: float = 0.2) -> T:
    """The predicate's first truthy value, asked every `interval` seconds; after `timeout` seconds, TimeoutError
    naming `what` (else the predicate)."""
    end = time.monotonic() + timeout
    while not (value := pred()):
        if time.monotonic() >= end:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what or getattr(pred, '__name__', pred)}")
        time.sleep(interval)
    return value
