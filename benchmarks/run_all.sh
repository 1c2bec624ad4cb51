#!/usr/bin/env bash
# Every measurement behind docs/performance.md's "The performance targets at a glance",
# one after another, each into its own file under OUT (default ./benchmark-results), with
# the machine and date.
#
#   bash benchmarks/run_all.sh [OUT]                 # this machine; 2-rank rows
#   RANKS=8 LAUNCH="mpirun --bind-to none -n" bash benchmarks/run_all.sh   # 16 real cores
#
# RANKS: ranks for the multi-rank rows (2 on a 2-core laptop, 8 on 16 cores).
# LAUNCH: the launcher, followed by the rank count (default: minimegatron's own).
# Without PyTorch the torch rows say so and go on; without a GPU the GPU rows are skipped.
# Runs one benchmark at a time: two at once would time each other.
set -u
OUT=${1:-benchmark-results}
RANKS=${RANKS:-2}
LAUNCH=${LAUNCH:-python -m minimegatron run -n}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$OUT"

run() {                      # run NAME COMMAND...: COMMAND's output, then the load, into NAME.txt
    local name=$1; shift
    echo "== $name: $*"
    { date -u; "$@"; uptime; } > "$OUT/$name.txt" 2>&1 || echo "   (exit $?: see $OUT/$name.txt)"
}

{ date -u; uname -a; echo "cores: $(nproc --all)"; python -c "import numpy, mpi4py; print(numpy.__version__, \
mpi4py.__version__)"; } > "$OUT/machine.txt" 2>&1
run vs_torch     python benchmarks/bench_vs_torch.py --steps 12 --threads 1 --device all
run autodiff     python benchmarks/bench_autodiff.py --steps 100
run optimizer    python benchmarks/bench_optimizer.py --steps 20
run ddp_vs_torch $LAUNCH 2 benchmarks/bench_ddp_vs_torch.py --steps 30 --d-model 64
run bound        $LAUNCH "$RANKS" benchmarks/bench_bound.py
run comm         $LAUNCH "$RANKS" benchmarks/bench_comm.py
run comm_small   $LAUNCH 2 benchmarks/bench_comm_small.py
run check_cost   $LAUNCH 8 benchmarks/bench_check_cost.py --steps 150
run dp_vocab16   $LAUNCH "$RANKS" benchmarks/bench_data_parallel.py --steps 20 --vocab-size 16
run dp_vocab4096 $LAUNCH "$RANKS" benchmarks/bench_data_parallel.py --steps 20 --vocab-size 4096
run scaling      python benchmarks/bench_scaling.py --steps 3
echo "results in $OUT/"
