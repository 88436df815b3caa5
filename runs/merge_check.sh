#!/usr/bin/env bash
# Gate: a conflict in a notebook merges through the driver runs/setup.sh configured (runs/hooks/nbdev-merge) into
# nbdev's marked cells, both sides kept, from a shell whose PATH has no nbdev: the driver finds this checkout's .venv
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
driver=$(git -C "$top" config --get merge.nbdev-merge.driver) \
  || { echo "merge_check: git has no nbdev-merge driver here (run: bash runs/setup.sh)"; exit 1; }
# this checkout's .gitattributes must send notebooks to the driver (the check below uses a copy of it)
attr=$(git -C "$top" check-attr merge -- nbs/index.ipynb | awk '{print $NF}')
[ "$attr" = nbdev-merge ] || { echo "merge_check: .gitattributes does not send notebooks to nbdev-merge ($attr)"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
git init -q; git config user.email check@example.com; git config user.name check
git config merge.nbdev-merge.driver "$driver"
mkdir -p runs/hooks; cp "$top/runs/hooks/nbdev-merge" runs/hooks/; ln -s "$top/.venv" .venv
cp "$top/.gitattributes" .gitattributes
nb() {  # a one-cell notebook whose cell says $1
  "$top/.venv/bin/python" -c 'import json, sys; json.dump({"cells": [{"cell_type": "markdown", "id": "c1",
    "metadata": {}, "source": [sys.argv[1]]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
    open("n.ipynb", "w"), indent=1)' "$1"
}
nb base; git add -A; git commit -qm base
git checkout -qb theirs; nb THEIRS; git commit -qam theirs
git checkout -q -; nb OURS; git commit -qam ours
PATH=/usr/bin:/bin git merge theirs > merge.log 2>&1 || true  # a conflict: the merge itself fails
# both sides kept, in a notebook that is still JSON (git's own text merge keeps both too, between conflict markers)
if grep -q OURS n.ipynb && grep -q THEIRS n.ipynb && "$top/.venv/bin/python" -c 'import json; json.load(open("n.ipynb"))'; then
  echo "merge_check: a notebook conflict merged into marked cells, both sides kept, without nbdev on PATH"
else
  echo "merge_check: the notebook lost a side of the merge:"; cat merge.log; exit 1
fi
