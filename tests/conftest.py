"""Shared fixtures: the shared test data folders and a real local HTTP server."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.localserver import LocalServer, tls_server_context

REPO = Path(__file__).resolve().parent.parent

# A runner that starts the suite in the background without job control (`cmd &` in a script) leaves SIGINT
# ignored, and every process started from here would inherit that: the tests that send Ctrl-C to a command
# would then see it ignored. A handler (unlike SIG_IGN) is reset to the default at exec, so the commands the
# tests start get Python's own Ctrl-C handling whatever launched the suite.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
SHARED = Path(os.environ.get("SITEMAPKIT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def xsd_dir() -> Path:
    """The official schemas (../shared/data/xsd); tests using them skip where it is absent."""
    d = SHARED / "data" / "xsd"
    if not (d / "sitemap.xsd").is_file():
        pytest.skip(f"official schemas not found at {d}")
    return d


@pytest.fixture(scope="session")
def real_sitemaps() -> Path:
    """The corpus of 80 real sitemaps (../shared/data/real-sitemaps); skipped where absent."""
    d = SHARED / "data" / "real-sitemaps"
    if not (d / "MANIFEST.tsv").is_file():
        pytest.skip(f"real-sitemaps corpus not found at {d}")
    return d


@pytest.fixture
def server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1, new for each test."""
    s = LocalServer().start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def https_server() -> Iterator[LocalServer]:
    """The local server speaking TLS with the self-signed certificate (`localserver.SELF_SIGNED`)."""
    s = LocalServer()
    s.httpd.socket = tls_server_context().wrap_socket(s.httpd.socket, server_side=True)
    s.base = s.base.replace("http://", "https://")
    s.start()
    try:
        yield s
    finally:
        s.stop()
