#!/usr/bin/env bash
# Command 1, the main job: set up (idempotent), then run the whole course on CPU, offline, on data the project builds
# itself: local corpus -> tokenizer -> base d4 -> bpb + CORE [local-bundle] -> midtraining -> chat eval -> SFT ->
# chat eval -> RL -> chat eval -> transcript -> report (report.md + report.html).
# Outputs go under $NANOCHAT_BASE_DIR (default ~/.cache/nanochat). A crashed or interrupted run resumes at the first
# unfinished stage when this command runs again; `bash runs/main.sh --restart` starts over.
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
bash runs/setup.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1
echo "=== setup: $(( $(date +%s) - T0 ))s"
python -m nanochat.scripts.pipeline --scale=main "$@"
echo "=== main job (setup included): $(( $(date +%s) - T0 ))s; report: ${NANOCHAT_BASE_DIR:-~/.cache/nanochat}/report/report.md"
