#!/usr/bin/env bash
# Gate: runs/nb_run.py runs each notebook in a process of its own, as a learner's new kernel. One worker, two
# notebooks: the first leaves an env variable and a module global in its process, the second asserts it sees neither
# (nbdev_test's reused workers fail it: 29_chat_rl's RL gain once depended on the notebooks run before it)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/nbs"
"$top/.venv/bin/python" - "$tmp/nbs" <<'PY'
import json, sys
def nb(path, code):
    cell = {"cell_type": "code", "id": "c1", "metadata": {}, "outputs": [], "execution_count": None, "source": [code]}
    json.dump({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, open(path, "w"), indent=1)
nb(f"{sys.argv[1]}/a_leaves.ipynb", "import os, nanochat.common as common\n"
   "os.environ['NB_RUN_ISOLATION'] = 'left'; common._nb_run_isolation = 'left'")
nb(f"{sys.argv[1]}/b_sees.ipynb", "import os, nanochat.common as common\n"
   "assert 'NB_RUN_ISOLATION' not in os.environ and not hasattr(common, '_nb_run_isolation'), 'state of a_leaves'")
PY
cd "$top"
if "$top/.venv/bin/python" runs/nb_run.py --path "$tmp/nbs" --n_workers 1 --out "$tmp/out" > "$tmp/log" 2>&1; then
  echo "isolation_check: two notebooks on one worker, the second saw nothing of the first"
else
  grep -v '^USDT' "$tmp/log" | tail -n 20; echo "isolation_check: a notebook saw what the one before it left"; exit 1
fi
