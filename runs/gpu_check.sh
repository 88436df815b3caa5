#!/usr/bin/env bash
# The GPU checks in one go, on one CUDA GPU: every notebook's `#| gpu` cells, the tiny pipeline on the GPU (all 13
# stages, bf16 under the precision policy) and bench/bench_sdpa_cuda.py, which the CPU test suite cannot reach. Logs
# go to $OUT (default build/gpu_check/); the last lines say what passed. On an H200 (torch 2.11, offline, so SDPA
# instead of FA3) it passed whole in 353 s: seven notebooks' gpu cells, the pipeline's 13 stages in 143 s.
# On an H100 (torch 2.11) on 2026-11-26: all passed in 397 s, once ipywidgets was carried (12_engine imports it).
# Again on an H100 on 2026-11-27 (at 5968691, per-shape weight gradients in): all passed in 471 s, the pipeline's
# 13 stages in 205 s; and at 20237f6 (RotaryCPU in): all passed in 474 s, the pipeline's 13 stages in 186 s.
# At de52873 (MLPCPU in), on an H100 on 2026-11-27: all passed in 423 s, the pipeline's 13 stages in 176 s.
# On an H200 on 2026-11-28 (at 67b54e0, torch 2.11.0+cu130): the seven notebooks' gpu cells and the pipeline's 13
# stages (218 s) passed, but one after another the notebooks took 452 s (24: 166, 39: 173), and with the bench the
# check no longer fitted a 500 s call; since then the bench runs first and alone (it times kernels), then the
# pipeline and every notebook at once. On an H200 on 2026-11-28 (at 1dd2f79 with 29's gpu cell, BENCH=0, 16 cores):
# all passed in 239 s, the eight notebooks' gpu cells beside the pipeline's 13 stages (196 s); bench_sdpa_cuda alone,
# the same day, 47 s.
# A machine without the package installed gets it through PYTHONPATH.
#   bash runs/gpu_check.sh             # sets up .venv first, as the other run scripts do
#   SETUP=0 bash runs/gpu_check.sh     # in an environment that already has the project's packages (PYTHON=python3)
#   BENCH=0 bash runs/gpu_check.sh     # without the bench (when nothing it times has changed since its last run)
set -uo pipefail
cd "$(dirname "$0")/.."
# the notebooks and the pipeline start `python -m nanochat...` from nbs/ and temp dirs: the package must import from
# anywhere, also where it is not installed (SETUP=0 in a machine's own Python)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ "${SETUP:-1}" = 1 ]; then
    bash runs/setup.sh && . .venv/bin/activate || exit 1
fi
PY="${PYTHON:-python}"
OUT="${OUT:-build/gpu_check}"
mkdir -p "$OUT"
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_check: torch sees no CUDA device here; these checks need one (the CPU suite is runs/test.sh)" >&2
    exit 2
fi
# every package the notebooks and the pipeline import, checked before any work: a machine without network (a lent
# GPU node) gets them as wheels, and one left out used to surface as a notebook's failure minutes later
missing=$("$PY" - <<'PYEOF'
import importlib.util
mods = ["execnb", "nbdev", "fastcore", "ipywidgets", "matplotlib", "rustbpe", "tiktoken", "pyarrow", "regex", "yaml"]
print(" ".join(m for m in mods if importlib.util.find_spec(m) is None))
PYEOF
)
if [ -n "$missing" ]; then
    echo "gpu_check: missing Python packages: $missing (install them, or carry them as wheels)" >&2
    exit 2
fi
T0=$(date +%s)
"$PY" -c "import torch; print(torch.cuda.get_device_name(), '| torch', torch.__version__)"

# the bench first and alone: it times kernels, so nothing else may share the GPU meanwhile
results=()
if [ "${BENCH:-1}" = 1 ]; then
    timeout 300 "$PY" bench/bench_sdpa_cuda.py > "$OUT/bench_sdpa_cuda.txt" 2>&1 \
        && results+=("DONE bench_sdpa_cuda: $OUT/bench_sdpa_cuda.txt") \
        || results+=("FAIL bench_sdpa_cuda: see $OUT/bench_sdpa_cuda.txt")
fi
# then the pipeline (its own base dir) and every notebook with gpu cells, all at once: one after another the notebooks
# alone took 452 s on an H200, and a lent machine's call has 10 minutes; they share the GPU without trouble
BASE="$(mktemp -d)"; trap 'rm -rf "$BASE"' EXIT  # its report is copied to $OUT below
( NANOCHAT_BASE_DIR="$BASE" timeout 900 "$PY" -m nanochat.scripts.pipeline --scale=tiny --device-type=cuda \
    > "$OUT/pipeline.log" 2>&1; echo $? > "$OUT/pipeline.rc" ) &
names=()
for nb in $(grep -l '"#| gpu' nbs/*.ipynb); do
    name="$(basename "$nb" .ipynb)"
    names+=("$name")
    ( timeout 600 "$PY" runs/nb_run.py --flags gpu --n_workers 1 --path "$nb" --out "$OUT/exec" \
        > "$OUT/$name.log" 2>&1; echo $? > "$OUT/$name.rc" ) &
done
wait
for name in "${names[@]}"; do
    if [ "$(cat "$OUT/$name.rc")" = 0 ]; then
        results+=("PASS $name (#| gpu cells included)")
    else
        results+=("FAIL $name: see $OUT/$name.log")
    fi
done
if [ "$(cat "$OUT/pipeline.rc")" = 0 ]; then
    results+=("PASS tiny pipeline on CUDA: timings at the end of $OUT/pipeline.log")
else
    results+=("FAIL tiny pipeline on CUDA (exit $(cat "$OUT/pipeline.rc")): see $OUT/pipeline.log")
fi
cp -r "$BASE/report" "$OUT/" 2>/dev/null
echo
grep -A20 '^| stage' "$OUT/pipeline.log"
echo
printf '%s\n' "${results[@]}"
echo "gpu_check: $(( $(date +%s) - T0 )) s"
! printf '%s\n' "${results[@]}" | grep -q '^FAIL'
