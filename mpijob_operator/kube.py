"""The operator's own API client: kubeconfig or in-cluster, with a client-side QPS/burst limit."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class TokenBucket:
    """client-go's flowcontrol token bucket: `qps` tokens a second, at most `burst` saved up."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
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


def api_client(kubeconfig: str | None, qps: float, burst: int) -> Any:
    from kubernetes import client, config

    configuration = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)
    # one connection per watch thread plus the lease and the workers
    configuration.connection_pool_maxsize = 16
    api = client.ApiClient(configuration)
    bucket = TokenBucket(qps, burst)
    request = api.rest_client.request

    def limited(*args: Any, **kwargs: Any) -> Any:
        bucket.wait()
        return request(*args, **kwargs)

    api.rest_client.request = limited
    return api
