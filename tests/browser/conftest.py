"""Headless Debian Chromium driven by Playwright (sync API) for the browser tests.

Chromium is Debian's package (never a Playwright download). When /usr/bin/chromium is
missing the fixture installs it with apt-get if we are root, and otherwise fails with the
command to run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# Playwright's sync API keeps an event loop running in the test thread; Django's guard
# would then refuse the tests' own (synchronous) database calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
INSTALL_HINT = "apt-get update && apt-get install -y chromium chromium-driver"
REPO = Path(__file__).resolve().parents[2]
# The library under test; the one place to change if it moves.
DISTORT_JS = REPO / "clients" / "js" / "src" / "distort.js"
SAMPLER_PAGE = Path(__file__).with_name("sampler_page.html")
# The seeded stand-in for crypto.getRandomValues shared with the Node harness.
SEEDED_CRYPTO = REPO / "tests" / "js" / "seeded_crypto.mjs"


def _install_chromium() -> None:
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "chromium", "chromium-driver"],
    ):
        result = subprocess.run(
            command, env=environment, capture_output=True, text=True, timeout=900
        )
        if result.returncode != 0:
            pytest.fail(f"`{' '.join(command)}` failed:\n{result.stderr[-2000:]}", pytrace=False)


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    if not CHROMIUM.exists():
        if os.geteuid() == 0 and shutil.which("apt-get"):
            _install_chromium()
        if not CHROMIUM.exists():
            pytest.fail(
                f"The browser tests need Debian's Chromium at {CHROMIUM}. "
                f"Install it as root: {INSTALL_HINT} (do not run `playwright install`).",
                pytrace=False,
            )
    return str(CHROMIUM)


@pytest.fixture(scope="session")
def browser(chromium_executable):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("The browser tests need the `playwright` Python package.", pytrace=False)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_executable, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="session")
def static_server(tmp_path_factory):
    """Serve distort.js and the harness page over http on 127.0.0.1 (ES modules need http)."""
    root = tmp_path_factory.mktemp("static")
    (root / "distort.js").symlink_to(DISTORT_JS)
    (root / "sampler_page.html").symlink_to(SAMPLER_PAGE)
    (root / "seeded_crypto.mjs").symlink_to(SEEDED_CRYPTO)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def sampler_page(browser, static_server):
    """A fresh page with ``window.distort`` = the distort.js module.

    ``window.seeded`` is tests/js/seeded_crypto.mjs: ``seeded.useSeed(n)`` replaces
    ``crypto.getRandomValues`` with a generator seeded by ``n``, ``seeded.useRealCrypto()``
    puts the browser's own back. The page starts with the real one.
    """
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{static_server}/sampler_page.html")
    try:
        page.wait_for_function("document.title === 'ready'", timeout=10_000)
    except Exception as exc:  # playwright's TimeoutError; say why the module did not load
        pytest.fail(f"distort.js did not load in the page: {errors or exc}", pytrace=False)
    yield page
    context.close()
    assert errors == [], f"errors in the page: {errors}"
