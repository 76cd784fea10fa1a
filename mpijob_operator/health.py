# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""/metrics on --monitoring-port, /healthz and /readyz on --health-port (one server when both are the same port);
and the heartbeats /healthz reads to tell a stuck loop from a slow one."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger("mpijob_operator.health")

# A check returns None when fine, else the reason it is not.
Check = Callable[[], "str | None"]


class Heartbeats:
    """Each loop beats with the time within which it promises to beat again; one that overran its promise is stuck.

    A starved process (a tight CPU limit, a busy node) is slow everywhere, so the promises are generous; a loop
    waiting for work promises nothing (math.inf), a runner in a run promises the run's own timeout plus a margin."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._due: dict[str, float] = {}
        self._lock = threading.Lock()

    def beat(self, name: str, within: float) -> None:
        with self._lock:
            self._due[name] = self.clock() + within

    def forget(self, name: str) -> None:
        with self._lock:
            self._due.pop(name, None)

    def stuck(self) -> list[str]:
        with self._lock:
            return overdue(self._due, self.clock())


def overdue(due: dict[str, float], now: float) -> list[str]:
    """The loops past the time they promised to beat again, by how long (pure)."""
    return [
        f"{name} (no heartbeat for {now - at:.0f}s past its deadline)"
        for name, at in sorted(due.items())
        if at != math.inf and now > at
    ]


def serve(
    port: int,
    *,
    registry: CollectorRegistry | None = None,
    healthz: Check | None = None,
    readyz: Check | None = None,
    before_scrape: Callable[[], None] = lambda: None,
) -> ThreadingHTTPServer:
    """Serves /metrics when `registry` is given, /healthz and /readyz when their checks are."""

    checks = {path: check for path, check in (("/healthz", healthz), ("/readyz", readyz)) if check is not None}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics" and registry is not None:
                before_scrape()
                self._reply(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path in checks:
                problem = checks[path]()
                body = (problem or "ok").encode() + b"\n"
                self._reply(503 if problem else 200, body, "text/plain; charset=utf-8")
            else:
                self._reply(404, b"not found\n", "text/plain; charset=utf-8")

        def _reply(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # probes every few seconds would drown the job logs

    server = ThreadingHTTPServer(("", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name=f"http-{port}", daemon=True).start()
    served = (["/metrics"] if registry is not None else []) + list(checks)
    log.info("monitoring endpoints up", extra={"port": server.server_address[1], "paths": ",".join(served)})
    return server


def servers(
    monitoring_port: int,
    health_port: int,
    registry: CollectorRegistry,
    healthz: Check,
    readyz: Check,
    before_scrape: Callable[[], None],
) -> list[ThreadingHTTPServer]:
    """The HTTP servers the ports ask for: none, one (same port) or two. Port 0 turns its endpoints off."""
    out = []
    if health_port:
        out.append(
            serve(
                health_port,
                healthz=healthz,
                readyz=readyz,
                before_scrape=before_scrape,
                registry=registry if monitoring_port == health_port else None,
            )
        )
    if monitoring_port and monitoring_port != health_port:
        out.append(serve(monitoring_port, registry=registry, before_scrape=before_scrape))
    return out
