"""Suite-wide test settings."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One torch thread per test (restored afterwards): on a shared 2-core machine two threads
    spin-wait and run many times slower, and CPU time is what the suite's budget counts.
    Subprocesses the tests start set their own thread count."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
