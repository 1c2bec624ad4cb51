"""Every tutorial runs to the end and prints what it promises.

Tutorials 01-04 and 08 are run by the tests of their own scheme (test_grid,
test_tensor_parallel, test_threed); this file runs the others, with short
settings so the suite stays quick. Each check reads the tutorial's own output.
"""
import os
import re
import subprocess
import sys

import pytest

from mpi_harness import run_script

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tutorial(name):
    return os.path.join(REPO, "tutorials", name)


def test_00_autodiff_and_gpt_loss_falls():
    out = subprocess.run([sys.executable, tutorial("00_autodiff_and_gpt.py"), "--steps", "120"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    by_hand = [line for line in out.splitlines() if "autodiff:" in line][0]
    autodiff, hand = by_hand.split("by hand:")
    assert autodiff.split("autodiff:")[1].split() == hand.split()
    losses = [float(line.split("loss")[1].split()[0]) for line in out.splitlines()
              if line.strip().startswith("step")]
    assert losses[0] > 2.2 and losses[-1] < losses[0] - 0.5


def _loss_rows(out, first_header):
    """The numeric rows under the header line that starts with ``first_header``."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [first_header])
    rows = []
    for line in lines[start + 1:]:
        parts = line.split()
        if not parts or not parts[0].isdigit():
            break
        rows.append([float(v) for v in parts[1:]])
    return rows


def test_05_data_parallel_equals_serial_and_shows_the_root_load():
    rc, out, err = run_script(8, tutorial("05_data_parallel.py"), ["--steps", "3"], timeout=180)
    assert rc == 0, err
    rows = _loss_rows(out, "step")                     # serial, DataParallel, DDP
    assert len(rows) == 3
    for serial, master, ddp in rows:
        assert abs(master - serial) < 1e-9 and abs(ddp - serial) < 1e-9
    assert "the master moves 7.0x" in out


def test_06_zero_stages_equal_and_memory_matches_the_formulas():
    rc, out, err = run_script(8, tutorial("06_zero.py"), ["--steps", "2"], timeout=180)
    assert rc == 0, err
    for row in _loss_rows(out, "step"):                # ZeRO-0 .. ZeRO-3
        assert max(row) - min(row) < 1e-9
    table = out.split("measured from the arrays")[1].split("\nFSDP2,")[0]
    pairs = [(int(m.replace(",", "")), int(f.replace(",", "")))
             for m, f in re.findall(r"([\d,]+) / +([\d,]+)", table)]
    assert len(pairs) == 16                            # 4 stages x weights, grads, optim, total
    for measured, formula in pairs:
        assert abs(measured - formula) <= 256
    fsdp = re.search(r"^FSDP2, .* max \|loss - stage 3's\| (\S+);", out, re.M)
    assert fsdp and float(fsdp.group(1)) < 1e-12, out
    row = re.findall(r"([\d,]+) / +([\d,]+)", out.split("gathered peak")[-1])
    assert len(row) == 5 and all(a == b for a, b in row), out        # = memory_fsdp, to the byte


def test_07_pipeline_prints_emulated_and_plain_bubbles(tmp_path):
    """The table's rows (losses, bubbles, in flight) and both timelines of every run, each
    with a Chrome trace in the format holding every F and B of every rank; the emulated
    bubble's accuracy is asserted in test_pipeline.py (a ratio, retried if busy)."""
    from test_chrome_trace import check_chrome_trace
    rc, out, err = run_script(4, tutorial("07_pipeline.py"),
                              ["--out", str(tmp_path), "--repeats", "1"], timeout=240)
    assert rc == 0, err
    rows = {(m.group(1), int(m.group(2))): m.groups()[2:] for m in re.finditer(
        r"^(naive|gpipe|1f1b) +(\d+) +([\d.]+) +([\d.]+) +([\d.e+-]+) +([\d.]+)% +([\d.]+)%"
        r" +([\d.]+)% +(\d+ \d+ \d+ \d+)", out, re.M)}
    assert sorted(rows) == sorted([("naive", 1)] + [(s, m) for s in ("gpipe", "1f1b")
                                                    for m in (4, 8, 16)]), out
    for (schedule, m), (loss, serial, diff, formula, emulated, plain, held) in rows.items():
        assert abs(float(loss) - float(serial)) < 1e-12 and float(diff) < 1e-12
        assert float(formula) == pytest.approx(100 * 3 / (m + 3), abs=0.05)
        assert 0 < float(emulated) < 100 and 0 < float(plain) < 100
        assert held == (" ".join(str(min(m, 4 - k)) for k in range(4)) if schedule == "1f1b"
                        else f"{m} {m} {m} {m}")
    assert "Plain, each step lasts its real compute" in out and "woke the sleeping ranks" in out
    assert re.search(r"\(this machine: \d+ cores for 4 ranks\)", out), out
    pngs = sorted(p for p in os.listdir(tmp_path) if p.endswith(".png"))
    assert len(pngs) == 14 and "gpipe_M16.png" in pngs and "gpipe_M16_plain.png" in pngs
    for name in pngs:
        with open(tmp_path / name, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        with open(tmp_path / (name[:-4] + ".json")) as f:        # its Chrome trace
            events = check_chrome_trace(f.read())
        assert {e["tid"] for e in events} == {0, 1, 2, 3}
        m = int(re.search(r"_M(\d+)", name).group(1))
        for rank in range(4):                                    # the run's every F and B
            for op in ("forward", "backward"):
                mine = sorted(e["args"]["micro_batch"] for e in events
                              if e["tid"] == rank and e["cat"] == op)
                assert mine == list(range(m)), (name, rank, op)


def test_09_interleaved_prints_the_grid_the_bubble_and_the_check():
    rc, out, err = run_script(4, tutorial("09_interleaved_1f1b.py"), [], timeout=240)
    assert rc == 0, err
    assert "stage 0 |F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 F3c1 F4c0" in out
    assert "simulated 3/16   formula (1/v)(K-1)/M = 3/16   plain 1F1B 3/8" in out
    assert "112 = 2M(Kv-1)   plain 1F1B 48 = 2M(K-1)" in out
    assert re.search(r"max\|loss diff\| [\d.e+-]+, .* PASS \(< 1e-10\)", out), out
    assert "step   loss interleaved   loss one process    |diff|" in out
    steps = re.findall(r"^ +(\d+) +(\d\.\d{15}) +(\d\.\d{15}) +(\S+)$", out, re.M)
    assert [s[0] for s in steps] == ["0", "1"], out           # the tutorial's own loop, 2 steps
    assert all(abs(float(a) - float(b)) < 1e-12 and float(a) > 2.0 for _, a, b, _ in steps)
    rc, out, err = run_script(4, tutorial("09_interleaved_1f1b.py"), ["--micro-batches", "6"],
                              timeout=120)
    assert rc != 0 and "multiple of the pipeline stages: M=6, K=4" in err, (out, err)


def test_13_zero_bubble_measures_the_bubbles_and_equals_one_process(tmp_path):
    """Emulated device time: ZB-H1's measured bubble below 1F1B's, each next to the simulated
    and the paper's (9 T, 3 T, 0); losses equal one process's; a timeline and a Chrome trace
    per schedule whose events are that run's F, B and W."""
    from test_chrome_trace import check_chrome_trace
    rc, out, err = run_script(4, tutorial("13_zero_bubble.py"), ["--out", str(tmp_path)],
                              timeout=300)
    assert rc == 0, err
    assert "stage 0 |F0 F1 F2 F3 .. .. .. B0 W0 F4 B1 W1 F5" in out, out
    rows = {m.group(1): [float(v) for v in m.groups()[1:]] for m in re.finditer(
        r"^(1f1b|zb-h1|zbv) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) "
        r"+([\d.]+) +([\d.e+-]+) ", out, re.M)}
    assert sorted(rows) == ["1f1b", "zb-h1", "zbv"], out
    for name, (bubble, simulated, table, makespan, sim_makespan, loss, serial, diff) in \
            rows.items():
        assert simulated == table == {"1f1b": 180.0, "zb-h1": 60.0, "zbv": 0.0}[name]
        assert bubble >= simulated - 10                  # a real run only adds delays
        assert sim_makespan == {"1f1b": 660.0, "zb-h1": 540.0, "zbv": 510.0}[name]
        assert makespan >= sim_makespan - 10
        assert abs(loss - serial) < 1e-12 and diff < 1e-12
    assert rows["zb-h1"][0] < rows["1f1b"][0], out
    checks = re.findall(r"^  (1f1b|zb-h1|zbv) +max\|loss diff\| (\S+), max\|grad diff\| (\S+),"
                        r" max\|weight diff\| (\S+) +PASS \(< 1e-10\)$", out, re.M)
    assert [c[0] for c in checks] == ["1f1b", "zb-h1", "zbv"], out
    assert all(float(d) < 1e-10 for c in checks for d in c[1:])
    assert "stage 0 |F0c0 F1c0 F2c0 F4c1 B4c1 W4c1 F5c1 F3c0 B5c1 W5c1 ...." in out, out
    dual = re.findall(r"^  (dualpipev?) +max\|loss diff\| (\S+), max\|grad diff\| (\S+),"
                      r" max\|weight diff\| (\S+) +PASS \(< 1e-10\)$", out, re.M)
    assert [c[0] for c in dual] == ["dualpipe", "dualpipev"], out
    assert all(float(d) < 1e-10 for c in dual for d in c[1:])
    held = [int(n.replace(",", "")) for n in re.findall(
        r"^  dualpipe  rank \d: ([\d,]+) parameters; all-reduces over the mirror pair "
        r"\[\d, \d\]: 2 \(([\d,]+) B the last\)$", out, re.M) for n in n]
    assert len(held) == 8 and all(b == 8 * p for p, b in zip(held[::2], held[1::2])), out
    assert held[0] == held[6] and held[2] == held[4]           # the mirrors hold the same
    steps = {"1f1b": ("forward", "backward"), "zb-h1": ("forward", "backward", "weight"),
             "zbv": ("forward", "backward", "weight")}
    for name, ops in steps.items():
        with open(tmp_path / f"{name}.png", "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        events = check_chrome_trace((tmp_path / f"{name}.json").read_text())
        compute = [e for e in events if e["cat"] in ops]
        chunks = 2 if name == "zbv" else 1
        assert len(compute) == 4 * 8 * chunks * len(ops)      # every F, B, W of every rank
        for rank in range(4):
            for op in ops:
                mine = sorted(e["args"]["micro_batch"] for e in compute
                              if e["tid"] == rank and e["cat"] == op)
                assert mine == sorted(list(range(8)) * chunks), (name, rank, op)
        assert {e["cat"] for e in events} == set(ops) | {"recv"}   # a wait for a neighbour


def test_10_sequence_parallel_trace_memory_and_one_process():
    rc, out, err = run_script(4, tutorial("10_sequence_parallel.py"), ["--steps", "2"],
                              timeout=180)
    assert rc == 0, err
    ring, ar = 3 * 2 * 8 * 32 * 8 // 4, 2 * 3 * 2 * 8 * 32 * 8 // 4   # tp=4, (2, 8, 32) float64
    for phase in ("forward", "backward"):
        assert re.search(rf"^{phase}, tp +2 +{2 * ar:,} B +0 +0 B +0 +0 B$", out, re.M), out
        assert re.search(rf"^{phase}, tp\+sp +0 +0 B +2 +{2 * ring:,} B +2 +{2 * ring:,} B$",
                         out, re.M), out
        assert f"{phase}: same bytes per rank: yes" in out
    rows = re.findall(r"^  (one process|tp=4|tp=4 \+ sequence) +([\d,]+) / +([\d,]+)  equal$",
                      out, re.M)
    assert [r[0] for r in rows] == ["one process", "tp=4", "tp=4 + sequence"], out
    sizes = [int(r[1].replace(",", "")) for r in rows]
    assert sizes[2] * 4 == sizes[0] and sizes[1] > sizes[2]               # all split by t
    diffs = re.search(r"max \|loss diff\| (\S+), \|grad diff\| (\S+), \|weight diff\| (\S+)$",
                      out, re.M)
    assert diffs and all(float(d) < 1e-10 for d in diffs.groups()), out
    steps = re.findall(r"^ +(\d+) +(\d\.\d{15}) +(\d\.\d{15}) +(\S+)$", out, re.M)
    assert [s[0] for s in steps] == ["0", "1"], out           # the tutorial's own loop, 2 steps
    assert all(abs(float(a) - float(b)) < 1e-12 and float(a) > 2.0 for _, a, b, _ in steps)


def test_11_mixed_precision_skips_the_overflow_on_every_rank():
    rc, out, err = run_script(4, tutorial("11_mixed_precision.py"), ["--steps", "8"],
                              timeout=180)
    assert rc == 0, err
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s+\d+\s", line)]
    assert [float(r[1]) for r in rows] == [256, 256, 256, 128, 128, 128, 256, 256]
    assert [r[3:7] for r in rows if len(r) > 3 and r[3] != "-"] == [["[0,", "1,", "2,", "3]"]]
    assert "skipped steps: 1 of 8" in out
    assert "8 steps: the same skips and scales: yes" in out   # one process, the same inf
    diffs = re.search(r"max \|loss diff\| (\S+) .*\|grad diff\| (\S+) .*\n  max \|weight diff\| "
                      r"([^:]+):", out)
    assert diffs, out                       # float16: rounding; AdamW's sign flips, ~2 lr
    assert float(diffs[1]) < 1e-3 and float(diffs[2]) < 1e-3 and float(diffs[3]) < 0.02, out
    # part two: the formats, an unscaled e4m3 cast, bf16 and fp8 with no loss scale
    assert "e4m3 of 500 unscaled: nan" in out and "then / s: 512, 3" in out
    formats = {r[0]: r[1:] for r in (line.split() for line in out.splitlines())
               if r and r[0] in ("float16", "bf16", "e4m3", "e5m2") and len(r) == 6}
    assert formats["float16"][4] == "0.00e+00" and formats["bf16"][4] == "1.00e-08", formats
    for name in ("bf16", "fp8"):
        low = re.search(rf"{name} ZeRO-2, no loss scale, 8 steps: max \|loss diff\| (\S+), "
                        rf"\|weight diff\| (\S+) against one {name} process; (\S+) against", out)
        assert low and float(low[1]) < 1e-3 and float(low[2]) < 0.05, out  # AdamW: ~2 lr
        assert 0 < float(low[3]) < 0.1, out
    assert "weights 2, grads 2, optimizer 12 = 16" in out
    assert "ZeRO-0 120.0, ZeRO-1 31.4, ZeRO-2 16.6, ZeRO-3 1.9" in out


def test_14_mixture_of_experts_equals_one_process_and_bytes_and_memory_match(tmp_path):
    rc, out, err = run_script(8, tutorial("14_mixture_of_experts.py"),
                              ["--steps", "3", "--out", str(tmp_path)], timeout=300)
    assert rc == 0, err
    rows = _loss_rows(out, "step")                     # one process, ep=4, |diff|, loads
    assert len(rows) == 3, out
    for row in rows:
        assert abs(row[0] - row[1]) < 1e-12 and row[0] > 2.0, out
        experts, ranks = row[3:11], row[11:]
        assert sum(experts) == 2 * 8 * 8 * 2 and len(ranks) == 8, out   # k * tokens * layers
        assert all(0 < r <= 2 * 2 * 4 * 1 * 2 for r in ranks), out      # under the padded rows
    assert "the load per expert summed over the ranks equals one process's: yes" in out
    diffs = re.search(r"^every rank against one process, 3 steps: max \|loss diff\| (\S+), "
                      r"\|grad diff\| (\S+), \|weight diff\| (\S+) ", out, re.M)
    assert diffs and all(float(d) < 1e-10 for d in diffs.groups()), out   # the tutorial's loop
    by_hand = re.search(r"^dropless dispatch by hand .* max \|output - one process's experts\| "
                        r"(\S+), every rank$", out, re.M)
    assert by_hand and float(by_hand.group(1)) < 1e-12, out
    assert "every rank's choices and drops equal one process's on its tokens: yes" in out
    drops = re.findall(r"^ *(0\.5|1\.0|1\.25|2\.0|dropless) +(\d|-) +(\d+) of 256 +(\d+)$",
                       out, re.M)
    assert [(f, c) for f, c, _, _ in drops] == [("0.5", "1"), ("1.0", "2"), ("1.25", "3"),
                                               ("2.0", "4"), ("dropless", "-")], out
    dropped = [int(d) for _, _, d, _ in drops]
    assert dropped == sorted(dropped, reverse=True) and dropped[0] > 0 and dropped[-1] == 0
    formula = (4 - 1) * (8 // 4) * 2 * 16 * 1 * 8      # (ep-1) E/ep C h b itemsize
    sent = re.findall(r"^(ep\.\S+) +(\d+) +([\d,]+) +([\d,]+)$", out, re.M)
    assert [s[0] for s in sent] == ["ep.dispatch", "ep.combine", "ep.dispatch.backward",
                                    "ep.combine.backward"], out
    for _, calls, trace_bytes, want in sent:
        assert (int(calls), trace_bytes, want) == (2, f"{formula:,d}", f"{formula:,d}")
    assert f"= {formula:,d} B each, on every rank (max |trace - formula| 0)" in out
    assert re.search(r"^dropless .*max \|trace - formula\| 0$", out, re.M), out
    expert = 8 * 16 * 16 + 5 * 16                      # one expert MLP h -> 4h -> h
    dense, local = 3232, 2 * 2 * expert                # rank 0's dense values, its 2 experts
    dims = dict((name, (int(got.replace(",", "")), int(want.replace(",", "")))) for name, got,
                want in re.findall(r"^(ep|dp x cp|edp|cp, tp, pp) +([\d,]+) +([\d,]+)  ",
                                   out, re.M))
    assert dims == {"ep": (4 * 2 * formula,) * 2,       # 4 all-to-alls x 2 blocks (trace)
                    "dp x cp": (14 * (dense + 1),) * 2,  # 2(8-1)/8 x 8 B x (dense + loss)
                    "edp": (8 * local,) * 2,             # 2(2-1)/2 x 8 B x expert values
                    "cp, tp, pp": (0, 0)}, out
    assert "every rank: max |trace - formula| 0" in out
    assert re.search(rf"^expert parameters +{2 * 2 * expert:,d} +{2 * 2 * expert:,d}$", out,
                     re.M), out
    assert re.search(r"^dispatch buffer \(bytes\) +2,048 +2,048$", out, re.M), out   # E b C h 8
    assert "every rank of dp=8, ep=4: max |measured - calculator| 0" in out
    check = re.search(r"^the bias on the grid against one process, 3 steps: max \|loss or bias "
                      r"diff\| (\S+)$", out, re.M)
    assert check and float(check.group(1)) < 1e-12, out          # aux-loss-free on 8 ranks
    spread = re.search(r"^mean spread over the last 20 steps: no balancing (\S+), aux loss "
                       r"(\S+), expert bias (\S+) ", out, re.M)
    none, aux, bias = map(float, spread.groups())
    assert bias < aux < none and 1.0 <= bias, out               # the bias balances best here
    assert len(re.findall(r"^ +(?:4|9|14|19|24|29|34|39)(?: +\d+\.\d\d){3}   ", out, re.M)) == 8
    picture = tmp_path / "14_mixture_of_experts.png"
    assert picture.exists() or "drawing needs matplotlib" in out
