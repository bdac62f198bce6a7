"""The pytest side of ``verify --run`` (loaded through ``PYTEST_PLUGINS`` in the user's pytest).

Labels gradient records with the running test's id, records each test's
outcome (and, for a failure, its error and the innermost line of the tree
it came from), and saves the results after every test.
"""
from __future__ import annotations

import pytest

from migrator.verify import runtime


def test_id(item) -> str:
    """The test's id with its file relative to the tree (pytest's own is relative to its rootdir)."""
    rel = runtime.relative(str(item.path))
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else ""
    return f"{rel or item.nodeid.split('::')[0]}::{rest}" if rest else (rel or item.nodeid)


def pytest_runtest_setup(item):
    runtime.STATE.test = test_id(item)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    runtime.STATE.test = test_id(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (report.when == "call" or report.failed or report.skipped):
        return
    slot = runtime.STATE.outcomes.setdefault(test_id(item), {"outcome": "passed", "error": None, "where": None})
    if report.failed:
        slot["outcome"] = "failed" if report.when == "call" else "error"
        if call.excinfo is not None and slot["error"] is None:
            slot["error"] = " ".join(f"{call.excinfo.type.__name__}: {call.excinfo.value}".split())[:400]
            frames = [(rel, entry.lineno + 1) for entry in call.excinfo.traceback
                      for rel in [runtime.relative(str(entry.path))] if rel is not None]
            slot["where"] = frames[-1] if frames else None
    elif report.skipped and slot["outcome"] == "passed":
        slot["outcome"] = "skipped"


def pytest_runtest_teardown(item, nextitem):
    runtime.finish_test()  # sessions of the test are still open: evaluate what they never fetched


def pytest_runtest_logfinish(nodeid, location):
    runtime.finish_test()
    runtime.STATE.test = None
    runtime.dump()
