#!/usr/bin/env bash
# One prepared device call (docs/benchmarks.md, "Results on a GPU"): the GPU commands of the
# benchmarks page, each under its own time limit so the call ends inside one device lease.
#
#   prepare here:  bash scripts/device_check.sh --prepare   (wheels the device image lacks, and
#                  MNIST / Fashion-MNIST from $FEDCORE_SHARED_DATA into the ignored .devcarry/)
#   on the device: bash scripts/device_check.sh             (carry .devcarry; logs land in $OUT)
#
# Steps, in order of value: the W3 target (300 rounds, start to result), W2 plain and uldp
# (fedcore against the plain loop), W4 with its profile, then KDP-FL's no-privacy row trained on
# towards T = 300 (--out keeps every round, even when cut short). `repro`: KDP-FL's no-privacy and
# ε = 1 rows at three seeds at the rule's T = 150 (issue 39), and HW-DPFL's tables.
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
  du -sh "$CARRY"; exit 0
fi

OUT=${OUT:-/tmp/device-out}; mkdir -p "$OUT"
PY=${PYTHON:-python3}
for w in "$CARRY"/wheels/*.whl; do  # one at a time: a wheel of another platform skips alone
  $PY -m pip install -q --no-deps --no-index "$w" >> "$OUT/pip.log" 2>&1
done
export FEDCORE_DATA=/tmp/fedcore-data
mkdir -p "$FEDCORE_DATA" && cp -r "$CARRY"/data/* "$FEDCORE_DATA/"
export FEDCORE_RDP_CACHE=/tmp/fedcore-rdp
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; uptime
  $PY -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0))"
} > "$OUT/host.txt" 2>&1
cp docs/benchmarks.md "$OUT/benchmarks.md"
step() {  # step NAME LIMIT_S COMMAND...: one timed step; its log and exit status in $OUT
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s%N)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "$name rc=$rc wall_ms=$ms load=$(cut -d' ' -f1-3 /proc/loadavg)" \
    | tee -a "$OUT/steps.txt"
}
if [ "${1:-}" = "repro" ]; then  # issue 39: the papers' seeds a CPU cannot train in a session
  mkdir -p "$OUT/repro" && cp assets/reproduction/kdp_fl.json assets/reproduction/hw_dpfl.json "$OUT/repro/"
  # T = 150: issue 39's rule on the no-privacy curve (fedcore/papers/kdp_fl.py, KDP_T_PLATEAU)
  step repro_kdp ${REPRO_KDP_LIMIT:-420} $PY -m fedcore reproduce kdp_fl --tables fmnist_noniid_eps1 --seeds 3 \
    --rows fedavg,dpfedavg,kdpfl --set rounds=150 --out "$OUT/repro"
  step repro_hw ${REPRO_HW_LIMIT:-150} $PY -m fedcore reproduce hw_dpfl --seeds 3 --out "$OUT/repro"
  rm -f "$OUT"/repro/*.md "$OUT/benchmarks.md"; cat "$OUT"/repro_*.log > "$OUT/repro.log"; rm -f "$OUT"/repro_*.log
  gzip -f "$OUT"/*.jsonl; exit 0
fi
W3="--set dataset=mnist --set model=cnn_uldp --set num_clients=1000 --set partition.kind=shards
  --set partition.shards_per_client=2 --set rounds=300 --set local.epochs=1 --set local.batch_size=10
  --set local.lr=0.05 --set method=dsdp_fedavg --set privacy.epsilon=[10.0] --set privacy.delta=[1e-05]
  --set device=cuda"
# issue 41 §7: W3's round taken apart on the device, the curve cache off (accounting, evaluation,
# training apart; 20 rounds), before the timed runs
step profile ${PROFILE_LIMIT:-90} env FEDCORE_RDP_CACHE=off $PY -m benchmarks.round_profile --workload W3 \
  --rounds 20 --device cuda --json
step w3 ${W3_LIMIT:-220} env FEDCORE_RDP_WORKERS=8 $PY -m fedcore run $W3 --out "$OUT/w3.jsonl"
step w2 ${W2_LIMIT:-130} $PY -m fedcore bench W2 --systems fedcore,loop --device cuda --threads 0 \
  --repeat 1 --out "$OUT/benchmarks.md"
step w4 ${W4_LIMIT:-60} $PY -m fedcore bench W4 --systems fedcore --device cuda --threads 0 \
  --repeat 1 --profile --out "$OUT/benchmarks.md"
step kdp ${KDP_LIMIT:-120} $PY -m fedcore run --preset kdp_fl_fmnist_noniid_fedavg --set rounds=300 \
  --set device=cuda --out "$OUT/kdp_fedavg_T300.jsonl"
gzip -f "$OUT"/*.jsonl
exit 0
