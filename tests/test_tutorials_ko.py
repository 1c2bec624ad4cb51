"""MINIMEGATRON_LANG=ko: the tutorials' headings in Korean, every key in both catalogues.

Every ``text("tNN.key", field=...)`` call in tutorials/*.py names a message of
both languages whose {fields} are exactly the keywords passed (read from the
source with ``ast``); four cheap tutorials then run in Korean and must print
the Korean headings and none of the English ones (the English output itself is
asserted by test_tutorials.py and the schemes' own tests). Every tutorial, run in
Korean, prints no English-only line (the rule: tests/korean_lines.py); tutorial 02's
run is test_i18n.py's. Each run is made once a session (tests/korean_runs.py): the Korean
pages' output samples are checked against the same runs (test_docs_ko_outputs.py).
"""
import ast
import glob
import os
import re

import pytest

from minimegatron import i18n
from korean_lines import english_lines
from korean_runs import korean_run
from mpi_harness import REPO_ROOT, run_script
from test_columns import cell_ends, ends, right_aligned
from test_i18n import HANGUL, fields
from test_ko_vocabulary import BANNED

NOTES_WORDS = set(BANNED.values())     # a header may be one of the notes' English terms

# every tutorial prints its headings through i18n.text (the static test checks this list)
TRANSLATED = ["00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12",
              "13", "14"]


def _text_calls(path):
    """(key, keyword names) of every text("key", ...) call in the file; a conditional key
    ("a" if ok else "b") gives both, an f-string key none."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "text":
            first = node.args[0]
            keys = [first] if isinstance(first, ast.Constant) else (
                [first.body, first.orelse] if isinstance(first, ast.IfExp) else [])
            for key in keys:
                yield key.value, sorted({k.arg for k in node.keywords})


def test_every_tutorial_key_in_both_languages_with_the_fields_passed():
    en, ko = i18n.CATALOGS["en"], i18n.CATALOGS["ko"]
    assert sorted(en) == sorted(ko)
    assert not set(i18n.en_tutorials.MESSAGES) & set(i18n.en.MESSAGES)   # no key overridden
    seen = set()
    for path in sorted(glob.glob(os.path.join(REPO_ROOT, "tutorials", "*.py"))):
        calls = list(_text_calls(path))
        number = os.path.basename(path)[:2]
        assert bool(calls) == (number in TRANSLATED), path
        for key, keywords in calls:
            assert key.startswith(f"t{number}."), (path, key)
            assert key in en and key in ko, (path, key)
            assert sorted(set(fields(en[key]))) == keywords, (path, key)
            assert sorted(set(fields(ko[key]))) == keywords, (path, key)
            seen.add(key)
    for key in i18n.en_tutorials.MESSAGES:
        assert key in seen, f"{key} is in the catalogue but no tutorial prints it"
        assert HANGUL.search(ko[key]) or key in ("t09.pass", "t09.fail"), key
    for key in i18n.en_tables.MESSAGES:               # headers: some are passed by name
        path, = glob.glob(os.path.join(REPO_ROOT, "tutorials", f"{key[1:3]}_*.py"))
        with open(path, encoding="utf-8") as f:
            source = f.read()
        assert f'"{key}"' in source or f"'{key}'" in source, key
        assert HANGUL.search(ko[key]) or ko[key] in NOTES_WORDS, key    # "group", as the notes


KOREAN_RUNS = [   # (ranks, tutorial, args, Korean lines, English phrases that must be gone)
    (2, "03_tensor_parallel_mlp.py", [],
     ["Megatron MLP, D=8, ffn=32, rank 2개, X (2, 4, 8)",
      "[rank 1] A_1 = A의 열 16..31: 모양(shape) (8, 16), B_1 = B의 행: 모양 (16, 8)",
      "all-reduce: forward 1번, backward 1번 (각각 512 바이트"],
     ["columns", "shape (8", "all-reduces:", "parameters", "per rank"]),
    (4, "09_interleaved_1f1b.py", [],
     ["bubble (유휴 / 작업)   시뮬레이션 3/16   공식 (1/v)(K-1)/M = 3/16   일반 1F1B 3/8",
      "단계당 메시지 수            112 = 2M(Kv-1)   일반 1F1B 48 = 2M(K-1)"],
     ["simulated", "messages per step", "activations held", "against one process", "PASS ("]),
    (4, "11_mixed_precision.py", ["--steps", "4"],
     ["float16 ZeRO-2, rank 4개, 단계 2에서 rank 1에 inf를 심음, 증가 간격(growth interval) 3",
      "2.7946  [0, 1, 2, 3]   <- 오버플로(overflow): 모든 rank가 건너뛰고 스케일을 절반으로",
      "ZeRO-0 120.0, ZeRO-1 31.4, ZeRO-2 16.6, ZeRO-3 1.9"],
     ["skipped", "overflow:", "bytes per parameter", "measured on one process"]),
    (2, "05_data_parallel.py", ["--steps", "2"],
     ["rank 2개, 배치(batch) 16: rank당 8행, parameter 26,624개",
      "[rank 1] 각 배치의 행 8..15, 마지막 로컬 DDP 손실(loss) ",
      "DataParallel: 마스터(master)가 rank 1의 1.0배 (= N-1) 바이트를 옮깁니다. DDP: 모든 "
      "rank가 같은 213.0k = 2(N-1)/N x gradient 213.0k"],
     ["rows per rank", "of each batch", "bytes per step per rank", "the master moves"]),
]


TABLES = {   # a table's rows, and which cells of its row ``ref`` every row must end with
    "03_tensor_parallel_mlp.py": (lambda lines: lines[-3:], 1, slice(-2, None)),
    "10_sequence_parallel.py": (lambda lines: [line for line in lines
                                               if re.search(r"\d / +\d", line)], 0, slice(-4, -1)),
    "14_mixture_of_experts.py": (lambda lines: [line for line in lines if re.match(
        r"^ {20,}측정|^(expert의|dense 부분의|dispatch 버퍼) ", line)], 1, slice(-2, None)),
}


HEADED = {   # a whole-line header (found by a word of it) over rows (a pattern): each header
    # cell but the last (left-aligned) ends where a cell of every row ends
    "06_zero.py": ("optimizer 상태", r"^\d +[\d,]+ /"),
}


def assert_tables_aligned(name, out):
    """The tables of ``TABLES[name]`` and ``HEADED[name]`` line up as a terminal shows them
    (Hangul: 2 columns)."""
    if name in TABLES:
        rows_of, ref, cells = TABLES[name]
        rows = rows_of(out.splitlines())
        assert len(rows) >= 3 and right_aligned(rows, ref, cells), "\n".join(rows)
    if name in HEADED:
        word, pattern = HEADED[name]
        header = next(line for line in out.splitlines() if word in line)
        rows = [line for line in out.splitlines() if re.match(pattern, line)]
        want = set(cell_ends(header)[:-1])
        assert rows and all(want <= set(ends(row)) for row in rows), "\n".join([header] + rows)


@pytest.mark.parametrize("ranks,name,args,korean,english", KOREAN_RUNS,
                         ids=[run[1][:2] for run in KOREAN_RUNS])
def test_tutorial_in_korean(ranks, name, args, korean, english):
    code, out, err = korean_run(ranks, name, args, timeout=120)
    assert code == 0, err
    for line in korean:
        assert line in out, (line, out)
    for phrase in english:
        assert phrase not in out, (phrase, out)
    assert english_lines(out) == [], out
    assert_tables_aligned(name, out)


# every other tutorial, on its fewest ranks and steps (03, 05, 09, 11 above; 02 in test_i18n)
EVERY_RUN = [(1, "00_autodiff_and_gpt.py", ["--steps", "20"]), (8, "01_collectives.py", []),
             (2, "04_megatron_gpt.py", ["--steps", "2"]), (2, "06_zero.py", ["--steps", "2"]),
             (4, "07_pipeline.py", ["--repeats", "1", "--out", "OUT"]),
             (8, "08_3d_parallel.py", ["--steps", "3", "--out", "OUT"]),
             (4, "10_sequence_parallel.py", ["--steps", "2"]),
             (4, "12_context_parallel.py", ["--steps", "2", "--out", "OUT"]),
             (4, "13_zero_bubble.py", ["--out", "OUT"]),
             (8, "14_mixture_of_experts.py", ["--steps", "2", "--out", "OUT"])]


def test_every_tutorial_is_covered():
    covered = {name[:2] for _, name, _ in EVERY_RUN} | {run[1][:2] for run in KOREAN_RUNS}
    assert covered | {"02"} == set(TRANSLATED)


@pytest.mark.parametrize("ranks,name,args", EVERY_RUN, ids=[run[1][:2] for run in EVERY_RUN])
def test_tutorial_in_korean_has_no_english_only_line(ranks, name, args):
    code, out, err = korean_run(ranks, name, args)
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.strip()]
    assert sum(bool(HANGUL.search(line)) for line in lines) >= 6, out
    assert english_lines(out) == [], out
    assert_tables_aligned(name, out)


def test_unknown_language_is_one_line_before_any_collective():
    code, out, err = run_script(2, "tutorials/11_mixed_precision.py", ["--steps", "2"],
                                timeout=60, env={"MINIMEGATRON_LANG": "xx"})
    assert code == 2 and "Traceback" not in err, err
    assert err.strip().startswith("error: MINIMEGATRON_LANG='xx' is not a language"), err
