"""No client address in any log (issue 27).

gunicorn, started with the production configuration (config/gunicorn.py), gets a
malformed request line; its error log says the request was invalid but carries no
address (gunicorn's own text is "Invalid request from ip=127.0.0.1: ..."; fails on the old
configuration). Django's console handler has the same filter."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from config.logfilters import REMOVED, NoAddresses, scrub

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _send(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(raw)
        return conn.recv(4096)


def test_gunicorns_error_log_has_no_client_address(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "gunicorn.log"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CACHE_URL")},
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "GUNICORN_THREADS": "1",
        "DJANGO_DEBUG": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "ab"),  # noqa: SIM115  (the server process owns it)
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
        answer = _send(port, b"NOT A REQUEST LINE\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400")
        _send(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\x00bad\r\n\r\n")
        deadline = time.monotonic() + 10
        while "Invalid request" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    text = log.read_text()
    assert "Invalid request from ip=" + REMOVED in text, text[-2000:]
    assert "127.0.0.1" not in text, text[-2000:]


def test_django_log_lines_lose_addresses() -> None:
    root = logging.getLogger().handlers
    handlers = [h for h in root if any(isinstance(f, NoAddresses) for f in h.filters)]
    assert handlers, "the console handler has no address filter"
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "from %s", ("10.1.2.3",), None)
    assert NoAddresses().filter(record) and record.getMessage() == f"from {REMOVED}"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("ip=192.0.2.7: bad", "ip=" + REMOVED + ": bad"),
        ("peer [2001:db8::1]:443", f"peer [{REMOVED}]:443"),
        ("10.0.0.5:51234 closed", f"{REMOVED}:51234 closed"),
        ("at 08:12:05 version 1.2.3", "at 08:12:05 version 1.2.3"),
    ],
)
def test_scrub(text: str, kept: str) -> None:
    assert scrub(text) == kept
