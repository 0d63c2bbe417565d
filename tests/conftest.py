"""Shared fixtures. Qt runs offscreen unless a display is chosen explicitly."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetmon import i18n

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Qt's settings (and anything else that follows XDG) of this run and its subprocesses go to a folder of
# the run's own, never the user's ~/.config; the UI tests narrow it to one folder per test.
_CONFIG_HOME = os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="fleetmon-tests-config-")
# The CLI (and its subprocesses) speak English whatever the machine's LANG: tests that check
# a translation ask for it (--lang, FLEETMON_LANG in a test's own environment, set_language).
os.environ["FLEETMON_LANG"] = "en"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_CONFIG_HOME, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    """pytest-randomly's seed, under -q too (it prints it in the header, which -q hides): a failure that
    only this order shows can be run again."""
    if config.pluginmanager.hasplugin("randomly") and not hasattr(config, "workerinput"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"tests ran in a random order: -p randomly --randomly-seed={seed} repeats it, "
                                    f"-p no:randomly runs them in file order")


@pytest.fixture(autouse=True)
def _restore_process_state() -> Iterator[None]:
    """Undo what a test left behind in the whole process, so that no test depends on the ones before it.

    The window freezes the heap (``ui.shell``: ``gc.freeze``) and ``ui.app.run_gui`` takes SIGINT and
    SIGTERM; a later test that counts frozen objects or sends itself a signal must not see either. Also
    the collector's enabled state and thresholds, the environment, the working directory and
    ``sys.excepthook`` and the language of ``fleetmon.i18n``. (``monkeypatch`` undoes what a test patches on
    purpose; this is for what the code under test changes as a side effect.)
    """
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    environ, cwd, excepthook = dict(os.environ), os.getcwd(), sys.excepthook
    yield
    if i18n.current_language() != "en":  # a CLI run with --lang, or a test's set_language
        i18n.set_language("en")
    if gc.get_freeze_count():
        gc.unfreeze()
    (gc.enable if enabled else gc.disable)()
    gc.set_threshold(*thresholds)
    for number, handler in handlers.items():
        if signal.getsignal(number) is not handler and handler is not None:
            signal.signal(number, handler)
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    if os.getcwd() != cwd:
        os.chdir(cwd)
    sys.excepthook = excepthook


REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def shared_fixtures() -> Path:
    """../shared/fixtures (real data from public projects); skips when absent."""
    path = SHARED / "fixtures"
    if not path.is_dir():
        pytest.skip("../shared/fixtures is not present")
    return path


@pytest.fixture
def python() -> str:
    return sys.executable


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--quality-report", metavar="FILE", default=None,
                     help="write the health engine's recall and false-alarm table to FILE ('-': the terminal)")



@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Slurm cluster on localhost (munged, slurmctld, a slurmd per node; tests/helpers/slurm.py),
    started once per test process; skips only when Slurm's Debian packages are not installed."""
    from tests.helpers import slurm

    why = slurm.available()
    if why:
        pytest.skip(why)
    cluster = slurm.start_cluster(lambda: tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.close()
