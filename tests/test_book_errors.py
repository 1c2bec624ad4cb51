"""The book's errors in Korean: every pattern of i18n/en_errors.py is a message the book raises.

Each entry of ``CALLS`` calls the book with bad input and keeps the message it raises
(never a copied string), so a message reworded in the book no longer matches its
pattern and the tests below fail until en_errors.py follows. The commands print them
through ``book_errors.translate`` (commands/entry.py, commands/parser.py).
"""
import os
import re
import string
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from minimegatron import Tensor, comm, nn, optim
from minimegatron.autodiff import functional as F
from minimegatron.autodiff.guards import NonFiniteError, check_finite, check_named
from minimegatron.backend import use_backend
from minimegatron.commands import memory, timeline
from minimegatron.data.datasets import repeat_task
from minimegatron.data.demo import make_optimizer
from minimegatron.i18n import book_errors, en_errors, ko_errors
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.nn.generate import check_generate
from minimegatron.nn.gpt import GPT, GPTConfig
from minimegatron.nn.moe.config import MoEConfig
from minimegatron.parallel.context_parallel.gpt import check_config as check_cp
from minimegatron.parallel.context_parallel.ulysses import check_heads
from minimegatron.parallel.context_parallel.zigzag import check_split
from minimegatron.parallel.data_parallel.ddp import DistributedDataParallel, _reduce_dtype
from minimegatron.parallel.data_parallel.fsdp2_grid import check_fsdp
from minimegatron.parallel.data_parallel.zero import ShardedOptimizer
from minimegatron.parallel.data_parallel.zero3 import zero_optimizer
from minimegatron.parallel.expert_parallel.groups import check_expert_parallel
from minimegatron.parallel.expert_parallel.trainer import MoETrainer
from minimegatron.parallel.grid import ProcessGrid, check_grid
from minimegatron.parallel.pipeline_parallel.engine import PipelineEngine
from minimegatron.parallel.pipeline_parallel.recompute import recompute
from minimegatron.parallel.pipeline_parallel.actions import Action
from minimegatron.parallel.pipeline_parallel.schedules import (check_interleaved, get_schedule,
                                                               gpipe)
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.parallel.pipeline_parallel.stage import stage_layers
from minimegatron.parallel.split import check_divisible
from minimegatron.parallel.tensor_parallel.gpt import VocabParallelEmbedding, check_tp_config
from minimegatron.parallel.tensor_parallel.linear import ColumnParallelLinear, RowParallelLinear
from minimegatron.parallel.tensor_parallel.mappings import scatter_to_tp
from minimegatron.parallel.tensor_parallel.sequence import check_sequence_length
from minimegatron.parallel.tensor_parallel.shards import shard_of
from minimegatron.parallel.threed import Trainer3D, check_3d_config
from mpi_harness import REPO_ROOT, run_mpi

HANGUL = re.compile(r"[\uac00-\ud7a3]")
TP4 = SimpleNamespace(name="tp", size=4, rank=0, ranks=[0, 1, 2, 3])     # a group's sizes
CONFIG = GPTConfig()                          # vocab 16, seq_len 16, 2 layers, 2 heads, d 32
comm.world()                                  # MPI started: a NaN is "on rank 0" in this process


def params():
    return [nn.Parameter(np.ones(3))]


def engine_batch(batch):
    """A one-stage PipelineEngine of 2 micro-batches given a batch of ``batch`` sequences."""
    from minimegatron.parallel.pipeline_parallel.stage import PipelineStage
    engine = PipelineEngine(PipelineStage(GPT(CONFIG), 0, 1), comm.world(),
                            num_micro_batches=2)
    ids = np.zeros((batch, 4), dtype=np.int64)
    engine.train_step(ids, ids)


def overflow_at_the_floor():
    scaler = DynamicLossScaler(init_scale=1.0, min_scale=1.0)
    scaler._at_floor(1.0)


def out_not_writable():
    out = np.zeros(3)
    out.flags.writeable = False
    comm.all_reduce(np.ones(3), comm.world(), out=out)


CALLS = {   # the pattern each call's message matches: a call for every pattern
    "grid.size": lambda: check_grid(8, 0, 1, 8),
    "grid.world": lambda: check_grid(8, 2, 2, 1),
    "split.batch": lambda: check_divisible(6, TP4),
    "tp.divisible": lambda: check_tp_config(GPTConfig(n_head=4), 8),
    "tp.pad_vocab": lambda: check_tp_config(GPTConfig(vocab_size=17), 2, pad_vocab_ok=False),
    "tp.linear": lambda: ColumnParallelLinear(8, 6, TP4),
    "tp.linear_weight": lambda: RowParallelLinear(8, 6, comm.world(),
                                                  master_weight=np.ones((6, 8))),
    "tp.vocab": lambda: VocabParallelEmbedding(18, 8, TP4),
    "tp.shards": lambda: shard_of("h.0.mlp.fc1.bias", np.ones(6), 0, 4),
    "tp.last_axis": lambda: scatter_to_tp(Tensor(np.ones((2, 6))), TP4),
    "sp.tokens": lambda: check_sequence_length(6, 4),
    "cp.tokens": lambda: check_split(6, 2, "zigzag"),
    "cp.attention": lambda: check_cp(CONFIG, 2, "bogus", "zigzag"),
    "cp.dropout": lambda: check_cp(GPTConfig(dropout=0.1), 2, "ring", "zigzag"),
    "cp.ulysses_heads": lambda: check_heads(2, 4),
    "cp.ulysses_tp_heads": lambda: check_cp(GPTConfig(n_head=4), 4, "ulysses", "contiguous",
                                            tp=2),
    "ep.grid": lambda: check_expert_parallel(4, 2, 1),
    "ep.experts": lambda: check_expert_parallel(2, 2, 1, num_experts=3),
    "moe.top_k": lambda: MoEConfig(num_experts=2, top_k=3),
    "moe.capacity": lambda: MoEConfig(capacity_factor=0.0),
    "moe.int": lambda: MoEConfig(num_experts=0),
    "moe.capacity_most": lambda: MoEConfig(num_experts=8, top_k=2, capacity_factor=1e4),
    "moe.clip": lambda: MoETrainer(CONFIG, MoEConfig(4, 2, 1.0), ProcessGrid(), clip_grad=-1.0,
                                     optimizer_fn=make_optimizer),
    "gpt.heads": lambda: GPTConfig(d_model=30, n_head=4),
    "gpt.positive": lambda: GPTConfig(n_layer=0),
    "gpt.dropout": lambda: GPTConfig(dropout=1.0),
    "gpt.seq_len": lambda: GPT(CONFIG)(np.zeros((1, 20), dtype=np.int64)),
    "ids.vocab": lambda: GPT(CONFIG)(np.full((1, 4), 16, dtype=np.int64)),
    "loss.empty": lambda: F.cross_entropy(Tensor(np.ones((0, 16))), np.zeros(0, np.int64)),
    "data.batch": lambda: repeat_task(0, 8, 16),
    "state.missing": lambda: GPT(CONFIG).load_state_dict({}),
    "state.shape": lambda: GPT(CONFIG).load_state_dict(
        {**GPT(CONFIG).state_dict(), "wte.weight": np.ones((3, 3))}),
    "generate.idx": lambda: check_generate(np.zeros(4, np.int64), 4, 16, 1.0, None),
    "generate.temperature": lambda: check_generate(np.zeros((1, 4), np.int64), 4, 16, 0.0,
                                                   None),
    "generate.top_k": lambda: check_generate(np.zeros((1, 4), np.int64), 4, 16, 1.0, 0),
    "generate.max_new": lambda: check_generate(np.zeros((1, 4), np.int64), -1, 16, 1.0, None),
    "matmul.shapes": lambda: Tensor(np.ones((2, 3))) @ Tensor(np.ones((4, 5))),
    "dropout.rng": lambda: F.dropout(Tensor(np.ones(4)), 0.5),
    "backend.unknown": lambda: use_backend("torch"),
    "recompute.tensor": lambda: recompute(lambda x: (x, x),
                                                Tensor(np.ones(2), requires_grad=True)),
    "optim.interval": lambda: optim.SGD(params(), lr=-1.0),
    "optim.empty": lambda: optim.SGD([], lr=0.1),
    "optim.betas": lambda: optim.AdamW(params(), betas=0.9),
    "optim.state_count": lambda: optim.SGD(params()).load_state_dict(
        optim.SGD(params() + params()).state_dict()),
    "scaler.number": lambda: DynamicLossScaler(init_scale=0.0),
    "scaler.backoff": lambda: DynamicLossScaler(backoff_factor=2.0),
    "scaler.interval": lambda: DynamicLossScaler(growth_interval=0),
    "mixed.wraps": lambda: MixedPrecisionOptimizer(params()),
    "ddp.empty": lambda: DistributedDataParallel(nn.Module(), comm.world()),
    "ddp.dtypes": lambda: DistributedDataParallel(two_dtypes(), comm.world()),
    "ddp.reduce_dtype": lambda: _reduce_dtype("int8", np.float32),
    "ddp.bucket": lambda: DistributedDataParallel(GPT(CONFIG), comm.world(), bucket_bytes=0),
    "zero.stage": lambda: zero_optimizer(params(), comm.world(), 4, None),
    "zero.optimizer": lambda: ShardedOptimizer(params(), comm.world(), 1, optimizer=None),
    "fsdp.zero": lambda: check_fsdp(SimpleNamespace(pp_size=1), 2, 1),
    "fsdp.pipeline": lambda: check_fsdp(SimpleNamespace(pp_size=2), 0, 1),
    "schedule.unknown": lambda: get_schedule("pipedream"),
    "schedule.sizes": lambda: gpipe(4, 8, 4),
    "schedule.interleaved": lambda: check_interleaved(4, 6, 2),
    "schedule.chunks": lambda: get_schedule("1f1b", 2),
    "schedule.num_chunks": lambda: check_interleaved(4, 8, 0),
    "schedule.warm_up": lambda: get_schedule("zb-h2")(4, 2, 0),
    "schedule.dualpipe": lambda: get_schedule("dualpipe")(4, 6, 0),
    "schedule.dualpipev": lambda: get_schedule("dualpipev")(4, 7, 0),
    "schedule.times": lambda: simulate("1f1b", 4, 8, 0.0),
    "schedule.t_weight": lambda: simulate("zb-h1", 4, 8, t_weight=0.0),
    "schedule.op": lambda: Action("jump", 0),
    "stage.layers": lambda: stage_layers(2, 4, 0),
    "stage.index": lambda: stage_layers(4, 2, 2),
    "engine.micro": lambda: PipelineEngine(SimpleNamespace(num_stages=1, stage=0),
                                           comm.world(), num_micro_batches=0),
    "engine.split": lambda: engine_batch(3),
    "engine.ends": lambda: PipelineEngine._check_batch(
        SimpleNamespace(num_micro_batches=1, chunks=[SimpleNamespace(is_first=True,
                                                                     is_last=True)]),
        None, np.zeros((2, 4))),
    "threed.micro": lambda: check_3d_config(CONFIG, SimpleNamespace(
        tp_size=1, cp_size=1, pp_size=1), "1f1b", 0, 0),
    "threed.zero": lambda: check_3d_config(CONFIG, SimpleNamespace(
        tp_size=1, cp_size=1, pp_size=1), "1f1b", 1, 3),
    "threed.empty": lambda: Trainer3D.check_batch(SimpleNamespace(
        grid=SimpleNamespace(dp_size=2), micro_batches=2), 0),
    "threed.split": lambda: Trainer3D.check_batch(SimpleNamespace(
        grid=SimpleNamespace(dp_size=2), micro_batches=2), 6),
    "comm.op": lambda: comm.all_reduce(np.ones(2), comm.world(), op="median"),
    "comm.mean": lambda: comm.all_reduce(np.ones(2, np.int64), comm.world(), op="mean"),
    "comm.inplace": lambda: comm.all_reduce(np.ones(2), comm.world(), inplace=True,
                                            out=np.ones(2)),
    "comm.out": lambda: comm.all_gather(np.ones(2), comm.world(), out=np.ones(3)),
    "comm.out_kind": lambda: comm.all_reduce(np.ones(2), comm.world(), out=[0.0, 0.0]),
    "comm.out_shape": lambda: comm.all_reduce(np.ones(2), comm.world(), out=np.ones(3)),
    "comm.out_read_only": out_not_writable,
    "comm.out_overlaps": lambda: (lambda x: comm.all_reduce(x, comm.world(), out=x))(
        np.ones(2)),
    "comm.peer": lambda: comm.send(np.ones(2), 3, comm.world()),
    "comm.all_to_all": lambda: comm.all_to_all(np.ones(3), SimpleNamespace(
        name="ep", size=2, rank=0, ranks=[0, 1])),
    "finite.step": lambda: check_finite("gradient", [np.array([np.nan])], 3),
    "finite.named": lambda: check_named("weight", [("h.0.attn.qkv.weight",
                                                    np.array([np.inf]))], step=2),
    "finite.activation": lambda: nn_watch_activation(),
    "finite.scale": overflow_at_the_floor,
    "where.serial": lambda: serial_non_finite(),
    "where.rank": lambda: check_finite("loss", [np.array([np.nan])], 0),
    "at.step": lambda: check_named("gradient", [("w", np.array([np.nan]))], step=5),
    "act.output": lambda: nn_watch_activation(),
    "note.zero3": lambda: check_named("weight", [("w", np.array([np.nan]))],
                                      note=" (in its ZeRO-3 shard)"),
}


def two_dtypes():
    module = nn.Module()
    module.a, module.b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(2, np.float32))
    return module


def serial_non_finite():
    """check_finite in a process that never started MPI ("in a serial run"), raised here."""
    code = ("import numpy as np\nfrom minimegatron.autodiff.guards import check_finite\n"
            "try:\n    check_finite('loss', [np.array([np.nan])], 0)\n"
            "except FloatingPointError as error:\n    print(error)\n")
    env = {**os.environ, "PYTHONPATH": REPO_ROOT}
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120).stdout.strip()
    raise NonFiniteError(said)


def nn_watch_activation():
    """A GPT whose embedding weight is finite but whose input makes a NaN activation."""
    from minimegatron.nn.watch import ActivationWatch, name_non_finite
    model = GPT(CONFIG)
    watch = ActivationWatch(model)
    model.ln_f.weight.data[:] = np.nan                    # the output is NaN, ln_f's input not
    model(np.zeros((1, 4), dtype=np.int64))
    name_non_finite([], [], watch=watch)


# The CollectiveMismatch patterns need real ranks: ONE launch of 2 ranks raises every case
# (workers/mismatch_messages.py); pattern -> the case whose message goes through it.
RANK_CASES = {
    "mismatch.collective": "shape", "mismatch.rank_line": "shape", "mismatch.differs": "shape",
    "mismatch.the_collective": "collective", "mismatch.root": "root", "mismatch.rows": "rows",
    "mismatch.sizes_length": "sizes_length", "mismatch.sizes_rows": "sizes_rows",
    "mismatch.counts": "counts", "mismatch.pair": "counts", "mismatch.fields": "fields",
    "mismatch.why_agreed": "fields", "mismatch.fields_all": "fields_all",
    "mismatch.why_step": "step", "mismatch.p2p": "p2p", "mismatch.sent": "p2p",
    "mismatch.receives": "p2p",
}
RANK_MESSAGES = []


def rank_messages():
    """{case: message} raised on 2 real ranks (a send/recv mismatch: the receiver's), once."""
    if not RANK_MESSAGES:
        results = run_mpi(2, "workers/mismatch_messages.py:messages", timeout=120)
        RANK_MESSAGES.append({"results": results, "said": {
            case: said for result in results for case, said in result.items()}})
    return RANK_MESSAGES[0]


def raised(key):
    """The message the book raises for CALLS[key]."""
    with pytest.raises((ValueError, TypeError, NonFiniteError)) as error:
        CALLS[key]()
    return str(error.value)


MESSAGES = {}


def message(key):
    if key not in MESSAGES:
        MESSAGES[key] = (rank_messages()["said"][RANK_CASES[key]] if key in RANK_CASES
                         else raised(key))
    return MESSAGES[key]


def fields(template):
    return sorted(name for _, name, _, _ in string.Formatter().parse(template) if name)


def test_both_catalogs_have_the_same_keys_and_fields():
    assert sorted(en_errors.PATTERNS) == sorted(ko_errors.MESSAGES)
    for key, template in en_errors.PATTERNS.items():
        assert sorted(set(fields(template))) == sorted(set(fields(ko_errors.MESSAGES[key]))), key
        assert HANGUL.search(ko_errors.MESSAGES[key]) or key.startswith(
            ("where.", "comm.out", "at.")), key
    assert len(en_errors.PATTERNS) >= 80
    assert sorted({**CALLS, **RANK_CASES}) == sorted(en_errors.PATTERNS)


@pytest.mark.parametrize("key", sorted(en_errors.PATTERNS))
def test_every_pattern_matches_a_message_the_book_raises(key):
    """The call's message is translated and ``key`` is among the patterns it went through."""
    used = []
    korean = book_errors.translate(message(key), "ko", used)
    assert key in used, (key, message(key), used)
    assert korean != message(key) and HANGUL.search(korean), (message(key), korean)
    assert book_errors.translate(message(key), "en") == message(key)


def test_a_translation_keeps_the_numbers_and_names():
    assert book_errors.translate(message("grid.world"), "ko") == (
        "grid dp=2 x pp=2 x tp=1 = rank 4개인데 job의 rank는 8개입니다. 곱이 8인 크기를 고르세요")
    assert book_errors.translate(message("tp.divisible"), "ko") == (
        "tensor parallel: n_head=4가 tp=8로 나누어떨어지지 않습니다")
    assert book_errors.translate(message("tp.pad_vocab"), "ko") == (
        "tensor parallel: vocab_size=17이 tp=2로 나누어떨어지지 않습니다 (pad_vocab=False; "
        "pad_vocab=True면 vocabulary를 tp의 배수로 채웁니다)")
    assert book_errors.translate(message("finite.named"), "ko") == (
        "rank 0, step 2: weight 'h.0.attn.qkv.weight'가 유한하지 않습니다 (NaN/inf)")
    assert book_errors.translate(message("comm.out_read_only"), "ko") == (
        "all_reduce: out 인자는 읽기 전용입니다")
    assert book_errors.translate(message("ids.vocab"), "ko") == (
        "token id 16이 vocabulary [0, 16) 밖에 있습니다")


def test_a_prefix_is_kept_and_an_unknown_message_stays_english():
    prefixed = "minimegatron timeline: --schedule zb-h2: " + message("schedule.warm_up")
    assert book_errors.translate(prefixed, "ko") == (
        "minimegatron timeline: --schedule zb-h2: schedule 'zb-h2'에는 stage 4개에 micro-batch가 "
        "적어도 7개 필요합니다 (첫 stage의 warm-up). 받은 값 2")
    for text in ("something else: went wrong", "", "오류: 이미 한국어"):
        assert book_errors.translate(text, "ko") == text
    assert book_errors.translate(message("grid.world"), "en") == message("grid.world")


def test_a_reworded_message_no_longer_matches():
    """The mutation the pattern test catches: the book says it another way."""
    reworded = message("grid.world").replace("choose sizes", "pick sizes")
    assert book_errors.translate(reworded, "ko") == reworded


@pytest.mark.parametrize("main, argv, korean", [
    (timeline.main, ["--schedule", "interleaved", "--micro-batches", "6", "--out", ""],
     "minimegatron timeline: 오류: interleaved schedule에는 micro-batch 수가 pipeline stage "
     "수의 배수여야 합니다: M=6, K=4"),
    (memory.main, ["--schedule", "zb-h2", "--pp", "4"],
     "minimegatron memory: 오류: --schedule zb-h2: schedule 'zb-h2'에는 stage 4개에 "
     "micro-batch가 적어도 7개 필요합니다 (첫 stage의 warm-up). 받은 값 1")])
def test_commands_print_the_book_errors_in_korean(main, argv, korean, monkeypatch, capsys):
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    with pytest.raises(SystemExit) as code:
        main(argv)
    assert code.value.code == 2
    assert korean in capsys.readouterr().err.splitlines()
    monkeypatch.setenv("MINIMEGATRON_LANG", "en")
    with pytest.raises(SystemExit):
        main(argv)
    assert "needs" in capsys.readouterr().err.splitlines()[-1]


def test_usage_error_translates(monkeypatch, capsys):
    from minimegatron.commands.entry import usage_error
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    with pytest.raises(SystemExit):
        usage_error(message("grid.world"))
    assert capsys.readouterr().err == (
        "오류: grid dp=2 x pp=2 x tp=1 = rank 4개인데 job의 rank는 8개입니다. 곱이 8인 크기를 "
        "고르세요\n")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_an_uncaught_book_error_is_said_in_korean_after_its_traceback(lang, monkeypatch):
    """The abort hook (runtime/faults.py) adds the Korean line; English adds nothing."""
    monkeypatch.setenv("MINIMEGATRON_LANG", lang)
    from minimegatron.runtime import faults
    with pytest.raises(NonFiniteError) as error:
        check_finite("loss", [np.array([np.nan])], 3)
    said = faults.in_language(error.value)
    assert said == ("" if lang == "en" else "NonFiniteError: step 3, rank 0: loss가 유한하지 "
                    "않습니다 (NaN/inf) (계속 학습하려면 check_finite=False를 주세요)\n")
    assert faults.in_language(ValueError("not a message of the book")) == ""
    if lang == "ko":                      # a job of 2 ranks under minimegatron run
        from mpi_harness import TESTS_DIR, minimegatron_run
        code, out, err, _ = minimegatron_run(
            "-n", "2", "--timeout", "60", os.path.join(TESTS_DIR, "workers", "non_finite.py"))
        assert code not in (0, 124), (code, out, err)
        assert "[rank 0] 처리되지 않은 예외" in err, err                  # the abort hook's line
        assert "non-finite loss at step 3" in err, err                    # Python's traceback
        assert "loss가 유한하지 않습니다 (NaN/inf)" in err, err


def test_a_collective_mismatch_keeps_each_ranks_call_and_translates_the_framing():
    """Every rank raised the same message; in Korean its rank lines keep describe()'s text
    and the call site, only the framing words change."""
    results = rank_messages()["results"]
    assert results[0]["shape"] == results[1]["shape"] and "p2p" not in results[0]
    english = message("mismatch.collective")
    site = english.splitlines()[1].rpartition(" at ")[2]
    assert site.startswith("tests/workers/mismatch_messages.py:"), english
    assert book_errors.translate(english, "ko") == (
        "group 'world'에서 collective 불일치 (shape가 다릅니다), 데이터는 옮기지 "
        "않았습니다:\n"
        f"  rank 0 (world 0): {site}에서 all_reduce(shape=(4,), dtype=float64, op='sum')\n"
        f"  rank 1 (world 1): {site}에서 all_reduce(shape=(8,), dtype=float64, op='sum')")
    assert book_errors.translate(message("mismatch.pair"), "ko").startswith(
        "group 'world'에서 collective 불일치 (all_to_allv의 개수가 맞지 않습니다: rank 0은 "
        "rank 1에게 row 1개를 보내는데, rank 1은 rank 0에게서 2개를 기다립니다), ")
    p2p = book_errors.translate(message("mismatch.p2p"), "ko").splitlines()
    assert p2p[1].endswith("에서 send(shape=(4,), dtype=float32)를 보냈습니다"), p2p
    assert p2p[2].endswith("에서 recv(shape=(4,), dtype=float64)로 받습니다"), p2p
