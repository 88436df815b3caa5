#!/usr/bin/env bash
# A larger CPU (laptop or workstation) run than the main job, at the scale of nanochat's dev/runcpu.sh: d6, seq 512,
# 5,000 base steps on FineWeb-Edu, then midtraining, SFT and RL on the synthetic tasks, with chat evals.
# Expect a day or more on a 2-core laptop and several hours on a 16-core workstation (the base stage dominates:
# measure yours with bench/bench_train.py). Needs the network for the FineWeb shards (the tasks fall back to the
# project's offline ones); DATA=local trains on the offline corpus instead.
#   bash runs/runcpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash runs/setup.sh
. .venv/bin/activate
export NANOCHAT_BASE_DIR="${NANOCHAT_BASE_DIR:-$HOME/.cache/nanochat}"

python -m nanochat.report reset
if [ "${DATA:-fineweb}" = "local" ]; then python -m nanochat.dataset --source=local; else python -m nanochat.dataset -n 8; fi
python -m nanochat.scripts.tok_train --max-chars=2000000000
python -m nanochat.scripts.tok_eval
python -m nanochat.scripts.base_train --depth=6 --head-dim=64 --window-pattern=L --max-seq-len=512 \
    --device-batch-size=32 --total-batch-size=16384 --eval-every=100 --eval-tokens=524288 --core-metric-every=-1 \
    --sample-every=100 --num-iterations=5000 --compile=True
python -m nanochat.scripts.base_eval --eval=bpb,core --local-bundle --max-per-task=16 --device-batch-size=1 \
    --split-tokens=16384
python -m nanochat.scripts.mid_train --max-seq-len=512 --device-batch-size=32 --total-batch-size=16384 \
    --eval-every=200 --eval-tokens=524288 --num-iterations=1500
python -m nanochat.scripts.chat_eval -i mid -x 200
python -m nanochat.scripts.chat_sft --source=mid
python -m nanochat.scripts.chat_eval -i sft -x 200
python -m nanochat.scripts.chat_rl --source=sft --task=SyntheticArithmetic
python -m nanochat.scripts.chat_eval -i rl -x 200
python -m nanochat.report generate
echo "done: report in $NANOCHAT_BASE_DIR/report/report.md; chat with: python -m nanochat.scripts.chat_cli"
