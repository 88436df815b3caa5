#!/usr/bin/env bash
# The GPU speedrun: nanochat's d20 recipe on one node of 8 GPUs (80 GB each). nanochat's README quotes about 4 hours
# on an 8xH100 node at ~$24/hour (~$100) for this recipe; this project has not timed it on that hardware. FineWeb-Edu shards, a 65,536-token tokenizer, base d20 trained to 20 tokens per parameter, base eval,
# midtraining, SFT, chat evals, optional RL, report. Needs the network (shards, eval bundle, task data).
#   bash runs/speedrun.sh                  # WANDB_RUN=name to log to wandb; RL=1 to add the RL stage
#   NPROC=4 bash runs/speedrun.sh          # fewer GPUs: the same total batch via gradient accumulation, ~2x longer
# Every command's flags can be checked without a GPU: NANOCHAT_DRY_RUN=1 makes each script parse its flags and exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash runs/setup.sh
. .venv/bin/activate
export OMP_NUM_THREADS=1
export NANOCHAT_BASE_DIR="${NANOCHAT_BASE_DIR:-$HOME/.cache/nanochat}"
NPROC="${NPROC:-8}"
WANDB_RUN="${WANDB_RUN:-dummy}"
TORCHRUN="torchrun --standalone --nproc_per_node=$NPROC"

python -m nanochat.report reset
# data: 8 shards now (enough for the tokenizer), the ~370 the d20 run needs in the background
python -m nanochat.dataset -n 8
python -m nanochat.dataset -n 370 &
DATASET_PID=$!
python -m nanochat.scripts.tok_train --max-chars=2000000000 --vocab-size=65536
python -m nanochat.scripts.tok_eval
# the chat tasks' data sets (GSM8K, ARC, MMLU, HumanEval, SmolTalk, the word list) from the Hugging Face hub
python -m nanochat.tasks download all
wait $DATASET_PID

# base model: d20, 20 tokens per parameter (Chinchilla), then bpb + CORE
$TORCHRUN -m nanochat.scripts.base_train -- --depth=20 --target-param-data-ratio=20 --run="$WANDB_RUN"
$TORCHRUN -m nanochat.scripts.base_eval -- --eval=core,bpb
# midtraining (conversations, tools, multiple choice), then SFT, each followed by the chat evals
$TORCHRUN -m nanochat.scripts.mid_train -- --run="$WANDB_RUN"
$TORCHRUN -m nanochat.scripts.chat_eval -- -i mid
$TORCHRUN -m nanochat.scripts.chat_sft -- --run="$WANDB_RUN"
$TORCHRUN -m nanochat.scripts.chat_eval -- -i sft
if [ "${RL:-0}" = "1" ]; then  # optional, as in nanochat: RL on GSM8K, then its eval
  $TORCHRUN -m nanochat.scripts.chat_rl -- --run="$WANDB_RUN"
  $TORCHRUN -m nanochat.scripts.chat_eval -- -i rl -a GSM8K
fi
python -m nanochat.report generate
echo "done: report in $NANOCHAT_BASE_DIR/report/report.md; chat with: python -m nanochat.scripts.chat_web"
