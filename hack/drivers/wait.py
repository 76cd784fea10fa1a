"""Polling, for the dev tools (bench, chaos): wait until a predicate holds, or raise TimeoutError naming what."""
from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(pred: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
