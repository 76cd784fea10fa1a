# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The launch gate's program: `python3 -m mpijob_operator.gate --hostfile FILE [--port N]... [--skip HOST] --timeout S`,
the init container the operator adds to every launcher (plugins/module_utils/mpijob/gate.py builds it).

It waits until every host of the hostfile resolves and, when ports are given, until one of them answers with an SSH
banner, then exits 0. At the timeout it names the hosts that did not answer and exits 0 all the same: the launcher
then starts as it would have without the gate. Standard library only: it runs in the operator's image before the
launcher's own containers, whatever those images hold.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

CONNECT_TIMEOUT_S = 2.0
ROUND_S = 1.0  # between two looks at the hosts still waited for
REPORT_S = 10.0  # between two progress lines
THREADS = 16
TERMINATION_LOG = "/dev/termination-log"  # the container's terminationMessagePath (Kubernetes' default)


def hosts_of(text: str, skip: str = "") -> list[str]:
    """The hosts of a hostfile (OpenMPI's `host slots=N`, Intel MPI's and MPICH's `host:N`), in order, once each;
    a host whose first label is `skip` is left out."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        host = line.split()[0].split(":", 1)[0]
        if host and host.split(".", 1)[0] != skip and host not in out:
            out.append(host)
    return out


def check(host: str, ports: Iterable[int], timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """None when `host` resolves and (ports given) one of `ports` answers with an SSH banner; else why not."""
    ports = list(ports)
    try:
        socket.getaddrinfo(host, ports[0] if ports else None, type=socket.SOCK_STREAM)
    except OSError:
        return "does not resolve"
    why = []
    for port in ports:
        try:
            with socket.create_connection((host, port), timeout=timeout) as conn:
                conn.settimeout(timeout)
                if conn.recv(4) == b"SSH-":
                    return None
                why.append(f"port {port}: no SSH banner")
        except OSError as exc:
            why.append(f"port {port}: {exc.strerror or exc.__class__.__name__}")
    return "; ".join(why) or None


def wait(
    hosts: list[str],
    ports: list[int],
    timeout: float,
    out: Callable[[str], None] = print,
    probe: Callable[[str, list[int]], str | None] = check,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    terminate: Callable[[str], None] = lambda line: None,
) -> bool:
    """Waits until every host passes `probe`; True when they all did, False at the timeout."""
    started = clock()
    pending = dict.fromkeys(hosts, "not looked at yet")
    what = f"port {' or '.join(map(str, ports))}" if ports else "its name"
    out(f"launch gate: waiting for {len(hosts)} workers to answer on {what} (at most {timeout:.0f} s)")
    reported = started
    with ThreadPoolExecutor(max_workers=max(1, min(THREADS, len(hosts)))) as pool:
        while True:
            names = list(pending)
            for host, why in zip(names, pool.map(lambda h: probe(h, ports), names), strict=True):
                if why is None:
                    del pending[host]
                else:
                    pending[host] = why
            elapsed = clock() - started
            if not pending:
                out(f"launch gate: all {len(hosts)} workers answer, after {elapsed:.0f} s")
                return True
            if elapsed >= timeout:
                line = (
                    f"launch gate: {len(pending)} of {len(hosts)} workers did not answer in {timeout:.0f} s: "
                    f"{summary(pending)}; starting the launcher anyway"
                )
                out(line)
                terminate(line)
                return False
            if clock() - reported >= REPORT_S:
                reported = clock()
                out(f"launch gate: {len(pending)} of {len(hosts)} workers not answering yet: {summary(pending)}")
            sleep(ROUND_S)


def termination_message(line: str, path: str = TERMINATION_LOG) -> None:
    """The kubelet keeps this file's text as the container's termination message, in the pod's status: what
    `submit.yml` and `mpijob_wait` show while the launcher runs without its workers."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(line)
    except OSError:
        pass  # not in a pod, or no such file: the log has the line


def summary(pending: dict[str, str], most: int = 5) -> str:
    shown = [f"{host.split('.', 1)[0]} ({why})" for host, why in list(pending.items())[:most]]
    more = len(pending) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m mpijob_operator.gate", description=__doc__)
    p.add_argument("--hostfile", required=True)
    p.add_argument("--port", type=int, action="append", default=[], help="sshd port; any one answering will do")
    p.add_argument("--skip", default="", help="the launcher's own host name, when it is a worker too")
    p.add_argument("--timeout", type=float, default=600.0)
    a = p.parse_args(argv)
    try:
        with open(a.hostfile, encoding="utf-8") as f:
            hosts = hosts_of(f.read(), a.skip)
    except OSError as exc:
        print(f"launch gate: cannot read {a.hostfile}: {exc}; starting the launcher anyway", file=sys.stderr)
        return 0
    if hosts:
        wait(hosts, a.port, a.timeout, out=lambda line: print(line, flush=True), terminate=termination_message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
