"""pytest.main with jax's `jax_test_dut` flag set (run.sh TEST_DUT), and a progress log:
usage `pytest_with_dut.py DUT PROGRESS_FILE PYTEST_ARGS...` (DUT "" leaves the flag alone,
PROGRESS_FILE "" writes no log).

The flag has no environment variable; it lives in jax._src.test_util, which binds
`capture_stdout` to whatever sys.stdout is when it is first imported. pytest swaps in its own
sys.stdout only while it collects a test file, so the import (and the flag) happen then: done
earlier, every test that checks printed output through jtu.capture_stdout sees nothing.

The progress log has one line `start NODEID` as a test begins and one `done NODEID OUTCOME`
(pass, fail, error or skip) when it ends, flushed at once: when the process dies (a crash, or
pytest-timeout's thread method ending a hung test) the last test started and not done is the
one that killed it, and run.sh starts the file again without the tests the log already holds.
The outcomes of the tests run before the process died are in the log alone (pytest writes its
junit xml at the end), and summarize.py reads them from there."""
import sys

import pytest


class SetTestDut:
    def __init__(self, dut):
        self.dut = dut

    def pytest_make_collect_report(self, collector):
        if self.dut and isinstance(collector, pytest.File):
            import jax
            import jax._src.test_util  # noqa: F401  (defines the flag)

            jax.config.update("jax_test_dut", self.dut)
        return None  # collection goes on as usual


class ProgressLog:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)  # line-buffered: each line reaches the file

        self.outcome = {}

    def pytest_runtest_logstart(self, nodeid, location):
        self.f.write(f"start {nodeid}\n")
        self.outcome[nodeid] = "pass"

    def pytest_runtest_logreport(self, report):
        # as junit counts them: a failed call fails, a failed setup or teardown is an error
        if report.failed:
            self.outcome[report.nodeid] = "fail" if report.when == "call" else "error"
        elif report.skipped and self.outcome.get(report.nodeid) == "pass":
            self.outcome[report.nodeid] = "skip"

    def pytest_runtest_logfinish(self, nodeid, location):
        self.f.write(f"done {nodeid} {self.outcome.pop(nodeid, 'pass')}\n")


if __name__ == "__main__":
    plugins = [SetTestDut(sys.argv[1])]
    if sys.argv[2]:
        plugins.append(ProgressLog(sys.argv[2]))
    sys.exit(pytest.main(sys.argv[3:], plugins=plugins))
