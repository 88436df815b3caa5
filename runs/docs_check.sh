#!/usr/bin/env bash
# Check the built docs (_docs/, from `bash runs/docs.sh`) in headless Chromium: every page is opened offline (any
# network request is refused and fails the check), its figures counted; screenshots go to _docs_shots/ (git-ignored).
# See runs/docs_check.py for what is checked.
#   bash runs/docs_check.sh [--page 08_loss_eval] [--strict]     # --page: only that page (and the home page)
# Installs Chromium from Debian (apt-get) when it is missing; if that is not possible, only the static checks run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -f .venv/bin/activate ]; then source .venv/bin/activate; fi

if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && ! command -v google-chrome >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "docs_check: installing chromium with apt-get (once, ~30 s)"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; then
      echo "docs_check: apt-get could not install chromium; only the static checks will run" >&2
    fi
  else
    echo "docs_check: no chromium and no root apt-get to install it; only the static checks will run" >&2
  fi
fi
exec python runs/docs_check.py "$@"
