# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The hand-off of batches to a warm run, both ends: the transport of the operator-to-module protocol (what a batch
and its result hold is mpijob/protocol.py's). The operator listens on a unix socket it names in the module's
`batch_from`. The module, once it has started, serves batches there until its time is up: each of its `slots`
connects, says `ready <pid>`, reads a batch (JSON, up to EOF), acknowledges it with `ok`, reconciles it and writes
the batch's result (JSON) back before it closes, then connects again for the next one. Only an acknowledged batch
belongs to the run: anything else and the operator runs the batch elsewhere, so a warm run that dies or ends never
loses one (an acknowledged batch without a result is retried, as a failed run's is). Standard library only (it runs
in the module)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

READY, ACK = b"ready", b"ok\n"
MAX_LINE = 64


def serve_batches(path: str, slots: int, until: float, handle: Callable[[list[dict]], dict]) -> int:
    """The module's end: `slots` batches at a time, each passed to `handle` (which returns the batch's result and
    never raises), until the monotonic time `until` or until the operator closes the socket (shutdown, or a newer
    run replaced this one). A batch being reconciled then is finished first. Returns the number of batches served."""
    served = [0]
    lock = threading.Lock()

    def slot() -> None:
        while time.monotonic() < until:
            jobs, sock = _take(path, until)
            if sock is None:
                return
            try:
                result = handle(jobs)
                with contextlib.suppress(OSError):
                    sock.settimeout(30)
                    sock.sendall(json.dumps(result, separators=(",", ":")).encode())
            finally:
                sock.close()
            del jobs, result
            trim_heap()
            with lock:
                served[0] += 1

    threads = [threading.Thread(target=slot, daemon=True) for _i in range(max(1, slots))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return served[0]


def _libc_trim() -> Callable[[], Any] | None:
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim  # glibc's; not on musl or macOS
    except (OSError, AttributeError, ImportError):
        return None
    return lambda: trim(0)


_MALLOC_TRIM = _libc_trim()


def trim_heap() -> None:
    """Gives what the heap has freed back to the system (glibc keeps it otherwise, in the middle of its heaps and in
    each thread's arena): a warm run lives for minutes and its batches come in bursts, each as large as its worlds;
    the operator decodes every watch event and keeps a fraction of it."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM()


def _take(path: str, until: float) -> tuple[list[dict], socket.socket | None]:
    """One batch, acknowledged, with the socket its result goes back on; no socket when none came before `until` or
    the operator is gone."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, until - time.monotonic()))
        sock.connect(path)
        sock.sendall(READY + b" %d\n" % os.getpid())
        data = _read_to_eof(sock, until)
        if data:
            jobs = json.loads(data)["jobs"]
            sock.sendall(ACK)
            return jobs, sock
    except (OSError, ValueError, KeyError):  # socket.timeout is an OSError
        pass
    sock.close()
    return [], None


def _read_to_eof(sock: socket.socket, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def batch_json(jobs: list[dict] | list[bytes]) -> bytes:
    """A batch as the module reads it, `{"jobs": [...]}`: its entries, or their JSON as the operator's store made it
    (a job's world in it is sent as the watch delivered it, never decoded and encoded again)."""
    if all(isinstance(j, bytes) for j in jobs):
        return b'{"jobs":[' + b",".join(jobs) + b"]}"  # type: ignore[arg-type]
    return json.dumps({"jobs": jobs}, separators=(",", ":")).encode()


class Handoff:
    """The operator's end: one listening socket per warm run, shared by every worker."""

    def __init__(self, path: str, slots: int = 1):
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(max(1, slots))
        self.pid: int | None = None  # the module process, once it said ready
        self.taken = 0  # batches the module acknowledged
        self._accept = threading.Lock()

    @property
    def closed(self) -> bool:
        """It takes no more batches (close() was called)."""
        return self.listener.fileno() < 0

    def ready(self) -> bool:
        """A slot of the module waits for a batch."""
        try:
            return bool(select.select([self.listener], [], [], 0)[0])
        except (OSError, ValueError):  # closed
            return False

    def give(
        self,
        jobs: list[dict] | list[bytes],
        ready_within: float,
        alive: Callable[[], bool],
        result_within: float,
        ack_within: float = 10.0,
    ) -> tuple[bool, dict[str, Any] | None]:
        """Hands `jobs` to a waiting slot: (taken, its result). Not taken (the module never acknowledged them: the
        batch is still the caller's) when no slot was ready within `ready_within` seconds while `alive()` (its run
        has not ended). Taken without a result when the module went away or took longer than `result_within`."""
        deadline = time.monotonic() + ready_within
        while True:
            conn = self._next(deadline, alive)
            if conn is None:
                return False, None
            try:
                if self._hand(conn, jobs, ack_within):
                    self.taken += 1
                    return True, self._result(conn, result_within)
            except (OSError, ValueError, IndexError):
                pass  # a slot that ended (its time was up) before it took the batch: try the next one
            finally:
                conn.close()

    def _next(self, deadline: float, alive: Callable[[], bool]) -> socket.socket | None:
        with self._accept:
            while True:
                try:
                    if select.select([self.listener], [], [], 0.05)[0]:
                        return self.listener.accept()[0]
                except (OSError, ValueError):  # closed
                    return None
                if time.monotonic() > deadline or not alive():
                    return None

    def _hand(self, conn: socket.socket, jobs: list[dict] | list[bytes], ack_within: float) -> bool:
        conn.settimeout(ack_within)
        line = b""
        while not line.endswith(b"\n") and len(line) < MAX_LINE:
            chunk = conn.recv(MAX_LINE)
            if not chunk:
                return False
            line += chunk
        if not line.startswith(READY):
            return False
        self.pid = int(line.split()[1])
        conn.sendall(batch_json(jobs))
        conn.shutdown(socket.SHUT_WR)
        return conn.recv(len(ACK)) == ACK

    @staticmethod
    def _result(conn: socket.socket, within: float) -> dict[str, Any] | None:
        try:
            data = _read_to_eof(conn, time.monotonic() + within)
            result = json.loads(data) if data else None
        except (OSError, ValueError):
            return None
        return result if isinstance(result, dict) else None

    def close(self) -> None:
        """Takes no more batches: the module's waiting slots read EOF and end (its batches in hand finish)."""
        self.listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
