"""pytest.main with jax's `jax_test_dut` flag set (run.sh TEST_DUT): usage
`pytest_with_dut.py DUT PYTEST_ARGS...` (DUT "" leaves the flag alone).

The flag has no environment variable; it lives in jax._src.test_util, which binds
`capture_stdout` to whatever sys.stdout is when it is first imported. pytest swaps in its own
sys.stdout only while it collects a test file, so the import (and the flag) happen then: done
earlier, every test that checks printed output through jtu.capture_stdout sees nothing."""
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


if __name__ == "__main__":
    sys.exit(pytest.main(sys.argv[2:], plugins=[SetTestDut(sys.argv[1])]))
