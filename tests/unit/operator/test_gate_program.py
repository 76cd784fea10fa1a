"""The launch gate's program (python3 -m mpijob_operator.gate): the hostfile's hosts, what answering means (a name
that resolves, an SSH banner), waiting, and the timeout that lets the launcher start anyway."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from mpijob_operator import gate


def test_hosts_of_every_hostfile_form() -> None:
    text = (
        "# comment\n"
        "pi-launcher.pi.ns.svc slots=2\n"
        "pi-worker-0.pi.ns.svc slots=2\n"
        "pi-worker-1.pi.ns.svc:4\n"
        "\n"
        "pi-worker-1.pi.ns.svc:4\n"
    )
    assert gate.hosts_of(text) == ["pi-launcher.pi.ns.svc", "pi-worker-0.pi.ns.svc", "pi-worker-1.pi.ns.svc"]
    assert gate.hosts_of(text, skip="pi-launcher") == ["pi-worker-0.pi.ns.svc", "pi-worker-1.pi.ns.svc"]


@contextlib.contextmanager
def listener(banner: bytes) -> Iterator[int]:
    """A TCP server on 127.0.0.1 that sends `banner` to every connection; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(banner)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        stop.set()
        thread.join()
        server.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_check_wants_an_ssh_banner_on_any_port() -> None:
    with listener(b"SSH-2.0-OpenSSH_9.2\r\n") as sshd, listener(b"HTTP/1.1 400\r\n") as other:
        shut = closed_port()
        assert gate.check("127.0.0.1", [shut, sshd]) is None
        assert "no SSH banner" in (gate.check("127.0.0.1", [other], timeout=1) or "")
        assert "port" in (gate.check("127.0.0.1", [shut]) or "")
    assert gate.check("no-such-host.invalid", [22]) == "does not resolve"
    assert gate.check("127.0.0.1", []) is None  # kubectl exec launchers: the name is enough


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_until_every_host_answers() -> None:
    clock, lines = Clock(), []
    up_at = {"w0": 0.0, "w1": 63.0}  # w1's sshd starts 63 s late

    def probe(host: str, ports: list[int]) -> str | None:
        return None if clock.now >= up_at[host] else "port 22: Connection refused"

    assert gate.wait(["w0", "w1"], [22], 600, lines.append, probe, clock, clock.sleep)
    assert lines[0] == "launch gate: waiting for 2 workers to answer on port 22 (at most 600 s)"
    assert lines[-1] == "launch gate: all 2 workers answer, after 63 s"
    assert any("1 of 2 workers not answering yet: w1 (port 22: Connection refused)" in line for line in lines)


def test_the_timeout_names_who_did_not_answer_and_lets_the_launcher_start() -> None:
    clock, lines = Clock(), []
    hosts = [f"w{i}.job.ns.svc" for i in range(8)]
    kept: list[str] = []
    assert not gate.wait(
        hosts, [22, 2222], 30, lines.append, lambda h, p: "does not resolve", clock, clock.sleep, kept.append
    )
    assert kept == lines[-1:]  # the last line is the container's termination message too
    assert lines[-1] == (
        "launch gate: 8 of 8 workers did not answer in 30 s: w0 (does not resolve), w1 (does not resolve), "
        "w2 (does not resolve), w3 (does not resolve), w4 (does not resolve) and 3 more; starting the launcher anyway"
    )


def test_main_reads_the_hostfile_and_always_exits_0(tmp_path, capsys) -> None:
    hostfile = tmp_path / "hostfile"
    with listener(b"SSH-2.0-x\r\n") as port:
        hostfile.write_text("me.job.ns.svc slots=1\nlocalhost slots=1\n")
        assert gate.main(["--hostfile", str(hostfile), "--port", str(port), "--skip", "me", "--timeout", "5"]) == 0
    assert "all 1 workers answer" in capsys.readouterr().out
    assert gate.main(["--hostfile", str(tmp_path / "missing"), "--timeout", "1"]) == 0
    assert "starting the launcher anyway" in capsys.readouterr().err


def test_the_termination_message_is_written_where_the_kubelet_reads_it(tmp_path) -> None:
    path = tmp_path / "termination-log"
    path.write_text("")
    gate.termination_message("launch gate: 1 of 1 workers did not answer", str(path))
    assert path.read_text() == "launch gate: 1 of 1 workers did not answer"
    gate.termination_message("no such place", str(tmp_path / "missing" / "log"))  # outside a pod: nothing, no error
