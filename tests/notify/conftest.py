"""Fixtures of the notification tests: real servers on 127.0.0.1 and a real database with findings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import pytest

from helpers.notify_servers import HookServer, SmtpServer, make_cert
from storage.db import open_database


@pytest.fixture
def hook() -> Iterator[HookServer]:
    server = HookServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    made = make_cert(tmp_path_factory.mktemp("tls"))
    if made is None:
        pytest.skip("the openssl command could not make a certificate")
    return made


@pytest.fixture
def proxy(cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[HookServer]:
    """The webhook server as the HTTPS proxy of this process: the vendors' hosts end here, not on the internet."""
    server = HookServer(tls=cert)
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, server.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    yield server
    server.close()


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    pytest.importorskip("aiosmtpd")
    server = SmtpServer()
    yield server
    server.close()


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    path = str(tmp_path / "fleet.db")
    open_database(path).close()
    return path
