#!/usr/bin/env bash
# Build the docs site into _docs/ from nbs/ and _quarto.yml, with every notebook's outputs (figures, tables, prints).
#
#   bash runs/docs.sh           # offline build: executed notebooks -> nbdev_proc_nbs -> smalldocs (pure Python) -> local KaTeX
#   bash runs/docs.sh --quarto  # the same executed notebooks, rendered by Quarto (needs Quarto on PATH), as nbdev_docs does
#
# Notebooks are committed without outputs. The pages get them from the test run: runs/nb_run.py (what runs/test.sh
# runs instead of nbdev_test; same cells, IN_TEST=1) saves every notebook with its outputs in build/executed/.
# Step 0 reuses those and executes, the nbdev_test way, only the notebooks changed since; a notebook
# whose execution fails fails the build, named (its page is still built, with the outputs up to the failure). A
# notebook that did not change keeps its last run even if the package did since (a note names it; `python
# runs/nb_run.py` runs it again): runs/test.sh runs every notebook just before it builds the docs.
# NBDEV_WORKERS (default 2) sets the parallelism; DOCS_EXECUTE=0 executes nothing (a quick look: pages of notebooks
# changed since their last run keep old outputs or none). The page "Differences from nanochat" is generated from the notebooks.
#
# Quarto cannot be installed without internet access to its release downloads (PyPI's quarto-cli downloads the
# binary at build time; Debian and npm have no package), so the default path renders the same _quarto.yml with
# smalldocs (PyPI, pinned in settings.ini dev_requirements) and serves KaTeX from _docs/site_libs/katex (npm,
# pinned in runs/docs/package-lock.json) instead of a CDN. The build fails if any page still loads a CDN.
# Idempotent: build/docs_src/, _proc/ and _docs/ are rebuilt from scratch each run (all git-ignored). After a test run
# it takes seconds: ~2 s to import nbdev + torch, well under 1 s per notebook, a few s for smalldocs (a cell that names
# itself as slow is a notebook bug); without one, executing the notebooks takes minutes (as nbdev_test does).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -f .venv/bin/activate ]; then source .venv/bin/activate; fi

mode=offline
case "${1:-}" in
  "") ;;
  --quarto) mode=quarto ;;
  -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
  *) echo "usage: bash runs/docs.sh [--quarto]" >&2; exit 2 ;;
esac

t0=$(date +%s.%N)
elapsed() { python -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f}s')" "$t0"; }

if [ "$mode" = quarto ] && ! command -v quarto >/dev/null; then
  echo "docs: quarto is not on PATH; use the offline build: bash runs/docs.sh" >&2; exit 2
fi

# 0. Every notebook with its outputs, in build/executed/ (reused from the test run where nothing changed since).
# A notebook that fails to execute or to process fails the build, named; the other pages are still built.
failed=()
python runs/docs_build.py exec || failed+=("notebook(s) failed to execute (their pages lack outputs)")
finish() {
  if [ ${#failed[@]} -gt 0 ]; then printf 'docs: FAILED: %s\n' "${failed[@]}" >&2; exit 1; fi
}

if [ "$mode" = quarto ]; then
  rm -rf _proc          # nbdev's cache never drops the page of a deleted or renamed notebook
  python runs/docs_build.py proc || failed+=("notebook(s) could not be processed (no page)")   # as nbdev_docs, then:
  (cd _proc && quarto render --no-cache)
  rm -rf _docs && mv _proc/_docs _docs
  echo "docs: built _docs/ with Quarto in $(elapsed)"
  finish; exit 0
fi
if command -v quarto >/dev/null; then
  echo "docs: note: quarto is installed, so 'nbdev_docs' (bash runs/docs.sh --quarto) is the preferred build;" \
       "continuing with the offline build"
fi
[ -f nbs/index.ipynb ] || echo "docs: warning: nbs/index.ipynb is missing, so the site has no home page" >&2

# 1. Process the executed notebooks and the generated pages (build/docs_src/) into _proc/ (nbdev_proc_nbs without its
#    sudo/curl attempt to install Quarto); names the cells that break or slow it. From scratch each time: nbdev's
#    cache keeps pages of deleted or renamed notebooks.
rm -rf _proc
python runs/docs_build.py proc || failed+=("notebook(s) could not be processed (no page)")

# 2. Render _proc/ with smalldocs (reads _proc/_quarto.yml + nbdev.yml + sidebar.yml; output-dir _docs).
smalldocs render _proc --quiet 2> _proc/smalldocs.log || { cat _proc/smalldocs.log >&2; exit 1; }
# smalldocs names pages after the notebooks (00_common.html) and ignores nbdev's `output-file` (Quarto: common.html);
# that note is expected. Anything else (a broken link, a key smalldocs ignores) is shown.
grep -v 'output-file is not read by smalldocs' _proc/smalldocs.log | sed 's/^/docs: smalldocs: /' >&2 || true
rm -rf _docs
mv _proc/_docs _docs

# 3. Front-end assets from npm (pinned by runs/docs/package-lock.json), copied next to the pages:
#    KaTeX (math) and Source Sans Pro (the cosmo theme's font, which it would fetch from Google Fonts).
assets=runs/docs/node_modules
if [ ! -f "$assets/katex/dist/katex.min.js" ] || [ ! -f "$assets/@fontsource/source-sans-pro/400.css" ] \
   || [ runs/docs/package-lock.json -nt "$assets/.package-lock.json" ]; then
  command -v npm >/dev/null || { echo "docs: npm is needed once to fetch KaTeX and the font (apt-get install npm)" >&2; exit 1; }
  npm ci --prefix runs/docs --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null
fi
katex=$assets/katex/dist font=$assets/@fontsource/source-sans-pro
mkdir -p _docs/site_libs/katex _docs/site_libs/fonts/source-sans-pro/files
cp -r "$katex/katex.min.css" "$katex/katex.min.js" "$katex/contrib" "$katex/fonts" _docs/site_libs/katex/
cp "$font"/{300,400,700}.css _docs/site_libs/fonts/source-sans-pro/
cp "$font"/files/*-{300,400,700}-normal.woff* _docs/site_libs/fonts/source-sans-pro/files/

# 4. Point every page at the local copies (relative paths, so _docs/ works from file:// and under any base URL),
#    turn nbdev's links to the published API docs into links to these pages, and refuse to ship a page that
#    still loads anything from a CDN.
python runs/docs_build.py localize

pages=$(find _docs -name '*.html' | wc -l)
echo "docs: built _docs/ ($pages pages) offline in $(elapsed); open _docs/index.html, check with: bash runs/docs_check.sh"
finish
