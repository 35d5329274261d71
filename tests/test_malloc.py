"""Freed blocks stay in the process: a training step's large tensors stop faulting pages in."""

import subprocess
import sys

import pytest

SCRIPT = """
import resource, sys
import torch
from scalelab.lm.model import GPT, GPTConfig
if sys.argv[1] == "keep":
    from scalelab.malloc import keep_freed_memory
    assert keep_freed_memory()
torch.manual_seed(0)
torch.set_num_threads(1)
model = GPT(GPTConfig(vocab_size=2048, block_size=128, n_layer=1, n_head=1, n_embd=32))
opt = torch.optim.AdamW(model.parameters())
x = torch.randint(0, 2048, (16, 129))
def step():
    _, loss = model(x[:, :-1], x[:, 1:])
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item()
for _ in range(40):  # the heap grows to its working size first; then steps reuse it
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(repr([step() for _ in range(60)][-1]))
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _run(mode: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True
    )
    loss, faults = out.stdout.split()
    return loss, int(faults)


@pytest.mark.alone  # page faults of a subprocess: other tests' load moves the count
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_training_steps_stop_faulting_pages_in_with_the_same_numbers() -> None:
    plain_loss, plain_faults = _run("plain")
    keep_loss, keep_faults = _run("keep")
    assert keep_loss == plain_loss  # bit for bit
    assert plain_faults > 10_000  # glibc hands large freed blocks back to the kernel
    assert keep_faults < plain_faults / 4  # 64x fewer over a whole demo-sized run
