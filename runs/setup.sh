#!/usr/bin/env bash
# Set up this checkout on a fresh machine: a virtualenv in .venv, torch pinned BEFORE anything else so that no
# dependency pulls another build (NANOCHAT_TORCH_INDEX picks its index: below), then the package with its dev tools,
# then git hooks.
# Idempotent: a stamp keyed on the install files skips the pip work when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# extras: dev = the notebook/test/docs tools (nbdev, JupyterLab, ipywidgets, ...); gpu = `kernels` (Flash Attention 3
# on Hopper), added where an NVIDIA driver is present. NANOCHAT_EXTRAS overrides (e.g. NANOCHAT_EXTRAS=dev,gpu).
EXTRAS=${NANOCHAT_EXTRAS:-dev$(command -v nvidia-smi >/dev/null 2>&1 && echo ,gpu || true)}
stamp=".venv/.stamp-$( (cat settings.ini setup.py runs/setup.sh; echo "$EXTRAS ${NANOCHAT_TORCH_INDEX:-}") | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "== setup: installing into .venv (torch first, then the package with extras [$EXTRAS])"
  .venv/bin/pip install -q --disable-pip-version-check -U pip 2>&1 | grep -v '^WARNING: Location' || true
  # NANOCHAT_TORCH_INDEX: where torch comes from, e.g. https://download.pytorch.org/whl/cpu for the CPU build on Linux
  # (PyPI's is the CUDA one); unset, pip's own configuration decides (a local CPU wheel here)
  .venv/bin/pip install -q --disable-pip-version-check ${NANOCHAT_TORCH_INDEX:+--index-url "$NANOCHAT_TORCH_INDEX"} \
    torch==2.13.0 2>&1 | { grep -v '^WARNING: Location' || true; }  # pipefail: pip's failure stops setup
  .venv/bin/pip install -q --disable-pip-version-check -e ".[$EXTRAS]" 2>&1 | { grep -v '^WARNING: Location' || true; }
  .venv/bin/python - <<'PY'
import torch, nbdev, execnb, fastcore, ipywidgets  # ipywidgets: the notebooks' sliders and JupyterLab's run-all check
assert torch.__version__.startswith('2.13.0'), torch.__version__
assert nbdev.__version__ == '2.4.14', nbdev.__version__
print(f"== setup: torch {torch.__version__}, nbdev {nbdev.__version__}, execnb {execnb.__version__}, fastcore {fastcore.__version__}")
PY
  rm -f .venv/.stamp-*; touch "$stamp"
fi
# git hooks: nbdev's merge driver for notebooks + a pre-commit check that notebooks are clean and exported. nbdev's
# driver and post-merge hook call its tools from PATH; ours call them from .venv (a pull or merge from a shell without
# it activated must not print "command not found" or leave a notebook as one side of the merge)
if [ -d .git ]; then
  (. .venv/bin/activate && nbdev_install_hooks >/dev/null 2>&1) || true
  install -m 755 runs/hooks/pre-commit runs/hooks/post-merge .git/hooks/
  git config --local include.path ../.gitconfig
  git config -f .gitconfig merge.nbdev-merge.name "resolve conflicts with nbdev_fix"
  git config -f .gitconfig merge.nbdev-merge.driver "bash runs/hooks/nbdev-merge %O %A %B %P"
fi
