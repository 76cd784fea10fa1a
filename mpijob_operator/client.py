# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The operator's API client: the collection's own shell (module_utils/kube: the same connection options, credentials
and transport as the modules the operator runs), with a client-side QPS/burst limit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.kube.rest import Rest, connect
from ansible_collections.mpi.operator.plugins.module_utils.kube.transport import LIBRARY_LOGGERS
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import ApiError

__all__ = ["LIBRARY_LOGGERS", "ApiError", "Limited", "Rest", "TokenBucket", "api_client"]


class TokenBucket:
    """client-go's flowcontrol token bucket: `qps` tokens a second, at most `burst` saved up."""

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self.sleep = sleep
        self.tokens = float(burst)
        self.stamp = clock()
        self.lock = threading.Lock()

    def reserve(self) -> float:
        """Takes one token; returns how long the caller must wait for it."""
        with self.lock:
            now = self.clock()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.qps)
            self.stamp = now
            self.tokens -= 1
            return 0.0 if self.tokens >= 0 else -self.tokens / self.qps

    def wait(self) -> None:
        delay = self.reserve()
        if delay > 0:
            self.sleep(delay)


class Limited:
    """A transport whose every request (a watch included) first takes a token of the bucket."""

    def __init__(self, transport: Any, bucket: TokenBucket):
        self.transport, self.bucket = transport, bucket

    def send(self, *args: Any, **kwargs: Any) -> Any:
        self.bucket.wait()
        return self.transport.send(*args, **kwargs)

    def open(self, *args: Any, **kwargs: Any) -> Any:
        self.bucket.wait()
        return self.transport.open(*args, **kwargs)


def api_client(kubeconfig: str | None, qps: float, burst: int) -> Rest:
    """The operator's client: `kubeconfig`, else what the modules would use ($KUBECONFIG, else the in-cluster
    service account)."""
    params = {"kubeconfig": kubeconfig} if kubeconfig else {}
    return connect(params, wrap=lambda transport: Limited(transport, TokenBucket(qps, burst)))
