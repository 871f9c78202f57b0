#!/usr/bin/env bash
# One prepared device call (docs/benchmarks.md, "Results on a GPU"): the GPU commands of the
# benchmarks page, each under its own time limit so the call ends inside one device lease.
#
#   prepare here:  bash scripts/device_check.sh --prepare   (wheels the device image lacks, and
#                  MNIST / Fashion-MNIST from $FEDCORE_SHARED_DATA into the ignored .devcarry/)
#   on the device: bash scripts/device_check.sh             (carry .devcarry; logs land in $OUT)
#   its CPU half:  bash scripts/device_check.sh --cpu       (the same steps shrunk to seconds, on this
#                  CPU, data copied from $FEDCORE_SHARED_DATA: checks that every command of the device
#                  call runs; tests/test_device_check.py runs it in CI)
#
# Steps (run in the script's order; STEPS=" setup w3 w3warm w4 " runs only those): the W3 round taken apart
# (profile, quick, quickeager: aten calls with and without graphs), W3's setup step by step and the W3 target
# (300 rounds, start to result) on a fresh and then a warm host, W2 plain and uldp (fedcore against the plain
# loop), W4 with its profile, with graphs and eager, the graphs' GPU tests, W4 eager against one CUDA graph
# (graph), then KDP-FL's no-privacy row trained on towards T = 300 (--out keeps every round, even when cut
# short). About 6 minutes on an H200, more on an H100 (2026-11-27: W3 63 s, W2 105 s there). Every output is
# also packed in $OUT/device_check.tgz. `repro`: KDP-FL's no-privacy and ε = 1 rows at three seeds at the
# rule's T = 150 (issue 39), and HW-DPFL's tables. `pfl` (last, device only): fedcore against pfl-research 0.6.0
# (benchmarks/pfl_compare.py; pfl installed with --target from .devcarry/wheels/pfl, made by --prepare).
set -u
cd "$(dirname "$0")/.."
CARRY=.devcarry
if [ "${1:-}" = "--prepare" ]; then
  SRC=${FEDCORE_SHARED_DATA:-../shared/data}
  mkdir -p "$CARRY/wheels" "$CARRY/data"
  grep -qx "/$CARRY/" .git/info/exclude 2>/dev/null || echo "/$CARRY/" >> .git/info/exclude
  cp -r "$SRC/MNIST" "$SRC/FashionMNIST" "$CARRY/data/"
  python -m pip download -q --no-deps -d "$CARRY/wheels" dp-accounting==0.6.0 diskcache==5.6.3
  python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux2014_x86_64 -d "$CARRY/wheels" "dm-tree~=0.1.8"
  # step pfl: pfl-research 0.6.0 and the dependencies the image lacks, in a folder of their own (installed
  # with --target beside the image's packages: pfl's pins, dp-accounting<0.6, would move the project's)
  python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
    -d "$CARRY/wheels/pfl" pfl==0.6.0 "multiprocess>=0.70.15,<0.71" "dill>=0.4.1" "prv-accountant>=0.2.0,<0.3.0"
  du -sh "$CARRY"; exit 0
fi

OUT=${OUT:-/tmp/device-out}; mkdir -p "$OUT"
PY=${PYTHON:-python3}
if [ "${1:-}" = "--cpu" ]; then   # the CPU half: every step's command, at a few seconds' size
  DEV=cpu; SRC=${FEDCORE_SHARED_DATA:-../shared/data}
  export FEDCORE_DATA; FEDCORE_DATA=$(mktemp -d)   # a copy: loading writes a cache beside the files
  trap 'rm -rf "$FEDCORE_DATA"' EXIT
  cp -r "$SRC/MNIST" "$SRC/FashionMNIST" "$FEDCORE_DATA/"
  CARRY_DATA=$SRC; SCRATCH=$FEDCORE_DATA/scratch   # removed with the copy
  SMALL="--set train_size=2000 --set test_size=500"; SMALL_PROFILE="--clients 100 $SMALL"
  W3_ROUNDS=2; W3_CLIENTS=100; PROFILE="--workload W3-quick --rounds 2 --clients 100 $SMALL"
  BENCH="--threads 1 --set rounds=1 --set num_clients=20 $SMALL"; KDP_ROUNDS=1; WORKERS=1; export FEDCORE_RDP_CACHE=$FEDCORE_DATA/rdp
  LIM_PROFILE=900; LIM_W3=900; LIM_W2=900; LIM_W4=900; LIM_KDP=900; LIM_GRAPH=900; GRAPH_REPEAT=1   # a shared CI host may be slow
  PFL_TASK="--clients 40 --samples 20 --cohort 8 --rounds 3 --features 64 --test 500"; LIM_PFL=900
  ALL_STEPS="profile quick setup w3 w2 w4 graphtest graph kdp"   # w4eager, quickeager, w3warm, pfl: not on a CPU
else
  DEV=cuda
  for w in "$CARRY"/wheels/*.whl; do  # one at a time: a wheel of another platform skips alone
    $PY -m pip install -q --no-deps --no-index "$w" >> "$OUT/pip.log" 2>&1
  done
  export FEDCORE_DATA=/tmp/fedcore-data
  mkdir -p "$FEDCORE_DATA" && cp -r "$CARRY"/data/* "$FEDCORE_DATA/"
  CARRY_DATA=$CARRY/data; SCRATCH=/tmp/fedcore-scratch
  SMALL=""; SMALL_PROFILE=""; W3_ROUNDS=300; W3_CLIENTS=1000; PROFILE="--workload W3 --rounds 20"; BENCH="--threads 0"; KDP_ROUNDS=300; WORKERS=""   # the default pool
  export FEDCORE_RDP_CACHE=/tmp/fedcore-rdp
  LIM_PROFILE=90; LIM_W3=220; LIM_W2=130; LIM_W4=60; LIM_KDP=120; LIM_GRAPH=90; GRAPH_REPEAT=20   # upper bounds
  PFL_TASK=""; LIM_PFL=120   # benchmarks.pfl_compare's default task (docs/benchmarks.md, issue 55 §5)
  ALL_STEPS="profile quick quickeager setup w3 w3warm w2 w4 w4eager graphtest graph kdp pfl"   # about 6 minutes on an H200 (2026-11-27), pfl not counted
fi
{ command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  nproc; uptime
  $PY -c "import torch, sys; print(sys.version.split()[0], torch.__version__,
torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
} > "$OUT/host.txt" 2>&1
cp docs/benchmarks.md "$OUT/benchmarks.md"
STEPS=" ${STEPS:-$ALL_STEPS} "   # which steps run (all by default)
step() {  # step NAME LIMIT_S COMMAND...: one timed step; its log and exit status in $OUT
  local name=$1 limit=$2; shift 2
  case "$STEPS" in *" $name "*) ;; *) return 0 ;; esac
  local t0; t0=$(date +%s%N)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "$name rc=$rc wall_ms=$ms load=$(cut -d' ' -f1-3 /proc/loadavg)" \
    | tee -a "$OUT/steps.txt"
}
if [ "${1:-}" = "repro" ]; then  # issue 39: the papers' seeds a CPU cannot train in a session
  mkdir -p "$OUT/repro" && cp assets/reproduction/kdp_fl.json assets/reproduction/hw_dpfl.json "$OUT/repro/"
  # T = 150: issue 39's rule on the no-privacy curve (fedcore/papers/kdp_fl.py, KDP_T_PLATEAU)
  # one row per call, each under its own limit: a row is written when its three seeds end, and the next
  # call keeps it (same mode), so a row cut short loses only itself
  STEPS=" ${REPRO_STEPS:-repro_kdp_fedavg repro_kdp_kdpfl repro_kdp_dpfedavg} "   # HW-DPFL's tables: stored
  for row_limit in fedavg:60 kdpfl:200 dpfedavg:200; do   # upper bounds (the no-privacy row: 150 rounds ~10 s)
    row=${row_limit%:*}
    step "repro_kdp_$row" ${REPRO_KDP_LIMIT:-${row_limit#*:}} $PY -m fedcore reproduce kdp_fl --tables fmnist_noniid_eps1 \
      --seeds 3 --rows "$row" --set rounds=150 --out "$OUT/repro"
  done
  step repro_hw ${REPRO_HW_LIMIT:-150} $PY -m fedcore reproduce hw_dpfl --seeds 3 --out "$OUT/repro"
  rm -f "$OUT"/repro/*.md "$OUT/benchmarks.md"; cat "$OUT"/repro_*.log > "$OUT/repro.log"; rm -f "$OUT"/repro_*.log
  gzip -f "$OUT"/*.jsonl; exit 0
fi
W3="--set dataset=mnist --set model=cnn_uldp --set num_clients=$W3_CLIENTS --set partition.kind=shards
  --set partition.shards_per_client=2 --set rounds=$W3_ROUNDS --set local.epochs=1 --set local.batch_size=10
  --set local.lr=0.05 --set method=dsdp_fedavg --set privacy.epsilon=[10.0] --set privacy.delta=[1e-05]
  --set device=$DEV $SMALL"
# issue 41 §7: W3's round taken apart on the device, the curve cache off (accounting, evaluation,
# training apart; 20 rounds), before the timed runs
step profile ${PROFILE_LIMIT:-$LIM_PROFILE} env FEDCORE_RDP_CACHE=off $PY -m benchmarks.round_profile $PROFILE \
  --device $DEV --json
# the done-when's count: W3-quick's aten calls a round with W3's steps replayed as graphs, and eager
step quick ${PROFILE_LIMIT:-$LIM_PROFILE} env FEDCORE_RDP_CACHE=off $PY -m benchmarks.round_profile --workload W3-quick \
  --device $DEV $SMALL_PROFILE --json
step quickeager ${PROFILE_LIMIT:-$LIM_PROFILE} env FEDCORE_RDP_CACHE=off FEDCORE_CUDA_GRAPHS=off $PY -m benchmarks.round_profile \
  --workload W3-quick --device $DEV --json
# W3 as a fresh host meets it (the data not yet parsed, no curve on disk): first what comes before its round 1,
# step by step (benchmarks/setup_profile.py); then start to exit, the timeline's last line a JSON of marks
# (benchmarks/timeline.py); then again on the now warm host (data parsed, curves kept on disk)
mkdir -p "$SCRATCH"
fresh_data() { local d; d=$(mktemp -d -p "$SCRATCH"); cp -r "$CARRY_DATA"/MNIST "$d/"; echo "$d"; }
W3_DATA=$(fresh_data); W3_RDP=$(mktemp -d -p "$SCRATCH")
step setup ${PROFILE_LIMIT:-$LIM_PROFILE} env FEDCORE_DATA="$(fresh_data)" FEDCORE_RDP_CACHE=off $PY -m benchmarks.setup_profile \
  --device $DEV $W3
step w3 ${W3_LIMIT:-$LIM_W3} env ${WORKERS:+FEDCORE_RDP_WORKERS=$WORKERS} FEDCORE_DATA="$W3_DATA" FEDCORE_RDP_CACHE="$W3_RDP" \
  $PY -m benchmarks.timeline -- $PY -m fedcore run $W3 --out "$OUT/w3.jsonl"
step w3warm ${W3_LIMIT:-$LIM_W3} env ${WORKERS:+FEDCORE_RDP_WORKERS=$WORKERS} FEDCORE_DATA="$W3_DATA" FEDCORE_RDP_CACHE="$W3_RDP" \
  $PY -m benchmarks.timeline -- $PY -m fedcore run $W3
step w2 ${W2_LIMIT:-$LIM_W2} $PY -m fedcore bench W2 --systems fedcore,loop --device $DEV $BENCH \
  --repeat 1 --out "$OUT/benchmarks.md"
step w4 ${W4_LIMIT:-$LIM_W4} $PY -m fedcore bench W4 --systems fedcore --device $DEV $BENCH \
  --repeat 1 --profile --out "$OUT/benchmarks.md"
cp "$OUT/benchmarks.md" "$OUT/benchmarks_eager.md"   # W4 with its DP-SGD steps eager (no CUDA graphs), beside
step w4eager ${W4_LIMIT:-$LIM_W4} env FEDCORE_CUDA_GRAPHS=off $PY -m fedcore bench W4 --systems fedcore --device $DEV \
  $BENCH --repeat 1 --profile --out "$OUT/benchmarks_eager.md"
# issue 41 §3: the engine's DP-SGD steps replayed as CUDA graphs, bit for bit the padded eager steps
# (tests/test_graphs.py's GPU test; pytest itself may be missing there), then W4's local training
# eager against one captured CUDA graph (eager only on CPU)
step graphtest ${GRAPHTEST_LIMIT:-$LIM_GRAPH} $PY scripts/gpu_tests.py tests.test_graphs tests.test_device_start
step graph ${GRAPH_LIMIT:-$LIM_GRAPH} $PY -m benchmarks.graph_step --device $DEV --repeat $GRAPH_REPEAT $SMALL --json
step kdp ${KDP_LIMIT:-$LIM_KDP} $PY -m fedcore run --preset kdp_fl_fmnist_noniid_fedavg --set rounds=$KDP_ROUNDS \
  --set device=$DEV $SMALL --out "$OUT/kdp_fedavg_T$KDP_ROUNDS.jsonl"
# issue 55 §5: fedcore against pfl-research 0.6.0 on the same synthetic FedAvg task (benchmarks/pfl_compare.py),
# pfl installed beside the image's packages from the wheels of --prepare; each system under its own limit
PFL_SITE=${PFL_SITE:-/tmp/pflsite}
case "$STEPS" in *" pfl "*)
  [ -d "$PFL_SITE/pfl" ] || $PY -m pip install -q --no-deps --no-index --target "$PFL_SITE" "$CARRY"/wheels/pfl/*.whl \
    >> "$OUT/pip.log" 2>&1 ;;
esac
step pfl ${PFL_LIMIT:-$LIM_PFL} $PY -m benchmarks.pfl_compare --device $DEV --threads 1 --pfl-path "$PFL_SITE" $PFL_TASK \
  --timeout $(( ${PFL_LIMIT:-$LIM_PFL} * 3 / 4 )) --out "$OUT/benchmarks.md"
gzip -f "$OUT"/*.jsonl
# a device call brings back a few files only: everything in one archive too (named to sort early)
[ "$DEV" = cuda ] && tar czf "/tmp/device_check.tgz" -C "$OUT" . && mv /tmp/device_check.tgz "$OUT/"
exit 0
