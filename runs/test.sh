#!/usr/bin/env bash
# Command 2: set up (idempotent) and run every gate. Prints one closing line "N passed, M failed".
#   gate 1: nbdev_clean leaves git clean        gate 2: nbdev_export leaves git clean (package in sync)
#   gate 3: nbdev_test (runs/nb_run.py), one count per notebook   gate 4: README.md in sync with nbs/index.ipynb
#   gate 5: the offline docs site builds with every notebook's outputs (reused from gate 3) and every page renders
#           in headless Chromium with its figures and no network request
#   gate 6: no notebook imports from a notebook numbered after it (runs/check_deps.py)
#   gate 7: JupyterLab as a learner meets it: Restart Kernel and Run All Cells on 12_engine (runs/lab_check.py)
#   gate 8: exported code reads like nanochat: one statement per line, no line over 120, no unused import (runs/lint.py)
#   gate 9: where the CPU has bf16 units, the notebooks that branch on them run again with kernels capped at AVX2
#   gate 10: a conflict in a notebook merges into marked cells through the driver setup configured, nbdev not on PATH
#   gate 11: runs/nb_run.py runs each notebook in a process of its own (what one leaves, the next does not see)
set -uo pipefail
cd "$(dirname "$0")/.."
bash runs/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
. .venv/bin/activate
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
passed=0; failed=0; failures=()
ok()   { passed=$((passed+1)); echo "PASS: $1"; }
bad()  { failed=$((failed+1)); failures+=("$1"); echo "FAIL: $1"; }
# the contents of what differs from git, not only the names: a file already modified that the tools rewrite counts
dirty() { { git diff -- nbs nanochat README.md
            git ls-files --others --exclude-standard -- nbs nanochat | grep -v '\.ipynb_checkpoints' | while read -r f; do
              sha1sum "$f"; done; } | sha1sum; }

before=$(dirty)
nbdev_clean >/dev/null 2>&1 && [ "$(dirty)" == "$before" ] && ok "nbdev_clean leaves git clean" \
  || { bad "nbdev_clean failed or changed notebooks"; git status --short -- nbs; }
before=$(dirty)
nbdev_export >/dev/null 2>&1 && [ "$(dirty)" == "$before" ] && ok "nbdev_export leaves git clean" \
  || { bad "nbdev_export failed or the package is out of sync with the notebooks"; git status --short -- nanochat; }
python runs/readme.py --check && ok "README.md in sync with nbs/index.ipynb" || bad "README.md out of sync (run: python runs/readme.py)"
python runs/check_deps.py && ok "no notebook imports from a later one" || bad "a notebook imports from a later one (runs/check_deps.py)"
python runs/lint.py && ok "exported code: one statement per line, lines <= 120, no unused imports" || bad "lint (runs/lint.py)"
if [ -d .git ]; then  # runs/setup.sh configures git's notebook merge driver in a checkout with its own .git
  bash runs/merge_check.sh && ok "a notebook conflict merges into marked cells, nbdev not on PATH" \
    || bad "notebook merge driver (runs/merge_check.sh)"
fi
bash runs/isolation_check.sh && ok "each notebook runs in a process of its own (runs/nb_run.py)" \
  || bad "notebook isolation (runs/isolation_check.sh)"

# the browser tests (web chat, docs) use Debian's Chromium; install it so they run instead of skipping
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "== installing chromium (apt-get, once)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
    || echo "WARNING: could not install chromium: the browser tests will skip"
fi

# notebooks: runs/nb_run.py is nbdev_test (same notebooks, cells, flags, IN_TEST=1, workers, output) that also saves
# each executed notebook to build/executed/, so the docs build below renders those outputs without running them again,
# and runs each notebook in a process of its own (nbdev_test's workers carry one notebook's state into the next).
# It prints the failing ones like nbdev_test; every other tested notebook counts as passed.
nbs=$(ls nbs/*.ipynb | grep -v '/_' | wc -l)
t0=$(date +%s)
log=$(mktemp); fp32_log=$(mktemp); fp32_out=$(mktemp -d); inductor_avx2=''  # this run's own: never shared
trap 'rm -rf "$log" "$fp32_log" "$fp32_out" ${inductor_avx2:+"$inductor_avx2"}' EXIT
python runs/nb_run.py --n_workers ${NBDEV_WORKERS:-2} --timing > "$log" 2>&1; rc=$?
tail -n 60 "$log"
nb_failed=$(sed -n '/Tests Failed On The Following Notebooks/,$p' "$log" | grep -c '\.ipynb' || true)
# nb_run's own count of what ran, when it got that far; without it (a crash) every notebook found counts, one failed
if summary=$(grep -oE 'nb_run: [0-9]+ passed, [0-9]+ failed of [0-9]+' "$log" | tail -n 1) && [ -n "$summary" ]; then
  nbs=$(echo "$summary" | awk '{print $7}'); nb_failed=$(echo "$summary" | awk '{print $4}')
fi
if [ $rc -ne 0 ] && [ "$nb_failed" -eq 0 ]; then nb_failed=1; fi
passed=$((passed + nbs - nb_failed)); failed=$((failed + nb_failed))
[ "$nb_failed" -gt 0 ] && failures+=("$nb_failed notebook(s)")
echo "nbdev_test: $((nbs - nb_failed))/$nbs notebooks passed in $(( $(date +%s) - t0 )) s"

# gate 9: a CPU with bf16 matrix units (AMX, AVX512-BF16) trains and orthogonalizes in bf16 (00_common's probe), so
# the notebooks above took the bf16 paths there; most laptops have no such units and take the fp32 ones (the fused
# loss's in-place addmm_, Muon's Gram iteration, SDPA for short training sequences). Those notebooks run again with
# torch's kernels capped at AVX2, which makes this CPU one of those laptops (its own inductor cache: kernels built for
# another vector width must not be shared). Elsewhere the run above already took the fp32 paths.
FP32_NBS='^(00_common|04_attention|05_gpt|06_optim|12_engine|24_base_train)\.ipynb$'
bf16_fast() { python -c "from nanochat.common import cpu_bf16_matmul_is_fast as f; exit(0 if f() else 1)"; }
if bf16_fast 2>/dev/null; then
  capped="ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2"
  inductor_avx2=$(mktemp -d /tmp/inductor_avx2_XXXX)
  capped="$capped TORCHINDUCTOR_CACHE_DIR=$inductor_avx2"
  t0=$(date +%s)
  if (export $capped; bf16_fast); then
    echo "SKIP: fp32 paths: capping the kernels at AVX2 did not make bf16 slow on this CPU, so they cannot be taken"
  elif env $capped python runs/nb_run.py --file_re "$FP32_NBS" --n_workers ${NBDEV_WORKERS:-2} --out "$fp32_out" \
      > "$fp32_log" 2>&1; then  # its own --out: the docs render the first run's outputs
    ok "fp32 paths: 00, 04, 05, 06, 12, 24 pass with the kernels capped at AVX2 ($(( $(date +%s) - t0 )) s)"
  else
    grep -v '^USDT' "$fp32_log" | tail -n 40
    bad "fp32 paths: notebooks fail with the kernels capped at AVX2 (as on a CPU without bf16 units)"
  fi
else
  echo "SKIP: fp32 paths: this CPU has no fast bf16 matmul, so the notebooks above already took them"
fi

# exit code 3 from a browser check: skipped (no Chromium or Playwright), reported as SKIP and not counted
python runs/lab_check.py; rc=$?
case $rc in 0) ok "JupyterLab: Restart Kernel and Run All Cells on 12_engine";; 3) echo "SKIP: JupyterLab run-all check (no Chromium or Playwright)";;
  *) bad "JupyterLab run-all check (runs/lab_check.py)";; esac

bash runs/docs.sh && ok "docs site builds offline, with the notebooks' outputs" || bad "docs build"
bash runs/docs_check.sh; rc=$?
case $rc in 0) ok "every docs page renders in headless Chromium, figures included";;
  3) ok "docs pages: every local link resolves"; echo "SKIP: docs pages in headless Chromium (no Chromium or Playwright)";;
  *) bad "docs render check";; esac

# which CPU ran this: a notebook whose result depends on rounding (29's RL) can be read against the machine
python - <<'EOF' 2>/dev/null || true
import os, torch
info = dict(l.split(':', 1) for l in open('/proc/cpuinfo').read().split('\n\n')[0].splitlines() if ':' in l)
info = {k.strip(): v.strip() for k, v in info.items()}
units = [f for f in ('avx512f', 'avx512_bf16', 'amx_bf16') if f in info.get('flags', '').split()]
print(f"machine: {info.get('model name', '?')} (family {info.get('cpu family', '?')}, model {info.get('model', '?')}), "
      f"{os.cpu_count()} CPUs, {' '.join(units) or 'no AVX-512'}; torch {torch.__version__} at "
      f"{torch.backends.cpu.get_cpu_capability()}")
EOF
[ $failed -gt 0 ] && echo "failures: ${failures[*]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
