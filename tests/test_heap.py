"""heap.keep(): a training step reuses its freed arrays instead of page-faulting them in.

Counted, not timed: the minor page faults of steady-state GPT steps (getrusage),
in a fresh process set up as a rank is (``runtime.setup()``: the heap kept) and with
MINIMEGATRON_KEEP_HEAP=0 (glibc's defaults), so the test shows the difference
the setting makes and fails if ``keep`` stops working.
"""
import json
import os
import subprocess
import sys

import pytest

from mpi_harness import REPO_ROOT

PROBE = """
import json, resource, statistics
import minimegatron.runtime
minimegatron.runtime.setup()
from minimegatron import nn, optim
from minimegatron.runtime import heap
from minimegatron.data.datasets import repeat_task
cfg = nn.GPTConfig(vocab_size=32, seq_len=32, n_layer=2, n_head=4, d_model=128, seed=0,
                   dtype="float32")
model = nn.GPT(cfg)
opt = optim.AdamW(model.parameters(), lr=1e-3)
faults = []
for step in range(12):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    x, y = repeat_task(16, cfg.seq_len, cfg.vocab_size, step=step)
    loss = model.loss(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps(statistics.median(faults[4:])))
"""


def faults_per_step(keep):
    env = {**os.environ, "MINIMEGATRON_KEEP_HEAP": keep, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")
def test_a_kept_heap_stops_the_page_faults_of_every_step():
    kept, default = faults_per_step("1"), faults_per_step("0")
    assert default > 1000, default        # glibc's defaults: every step faults its arrays in
    assert kept < default / 20, (kept, default)
