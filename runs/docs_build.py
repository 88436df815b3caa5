"""The Python steps of the offline docs build; `runs/docs.sh` calls them in order. Run from the repository root.

    python runs/docs_build.py exec       # executed notebooks in build/executed/ (reuses runs/nb_run.py's; runs stale ones)
    python runs/docs_build.py proc       # build/docs_src/ (executed notebooks, the generated differences page, nbs/'s
                                         # site files) -> _proc/ (nbdev_proc_nbs, without its attempt to install Quarto)
    python runs/docs_build.py localize   # _docs/: local KaTeX and fonts, local API links, and no CDN left
    python runs/docs_build.py differences [FILE]   # print (or write) the generated "Differences from nanochat" page
"""
import ast, builtins, configparser, json, os, re, shutil, sys, time, warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nb_run   # noqa: E402  (runs/nb_run.py: the test run that keeps the outputs)

EXPORT = {'export', 'exports', 'exporti'}
SRC = Path('build/docs_src')          # what nbdev processes: executed notebooks + generated pages + nbs/'s site files
DIFF_NB = 'differences.ipynb'         # the generated page (nbs/sidebar.yml links it)


def _directives(src):
    return {l[3:].strip().split(':')[0].split()[0] for l in src.splitlines() if l.startswith('#|') and l[3:].strip()}


def _first_line(src):
    return next((l for l in src.splitlines() if l.strip() and not l.startswith('#|')), '')


def _top_level(node):
    "Nodes that bind names in the notebook's namespace: not inside a function, class body, lambda or comprehension."
    for ch in ast.iter_child_nodes(node):
        yield ch
        if not isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
                               ast.SetComp, ast.DictComp, ast.GeneratorExp)): yield from _top_level(ch)


def _binds(nodes):
    out = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    out |= {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    out |= {n.name for n in nodes if isinstance(n, ast.ExceptHandler) and n.name}
    return out | {(a.asname or a.name).split('.')[0] for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}


def docs_run_cells(nbs=Path('nbs')):
    """Cells that nbdev runs for the API docs although they are not exports: first those that use a name no earlier such
    cell defines (likely to fail), then visible cells that import and do more (they may need state from other cells)."""
    for nb in sorted(nbs.glob('[!_.]*.ipynb')):
        known = set(dir(builtins)) | {'show_doc', 'get_ipython', 'display'}
        for i, c in enumerate(json.loads(nb.read_text(encoding='utf-8'))['cells']):
            src = ''.join(c['source']) if c['cell_type'] == 'code' else ''
            try: tree = ast.parse('\n'.join('' if l.lstrip().startswith(('%', '!')) else l for l in src.splitlines()))
            except SyntaxError: continue
            d, nodes = _directives(src), list(ast.walk(tree))
            if re.search(r'^#\|\s*eval:\s*false', src, re.I | re.M): continue
            imports = any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes)
            if not (d & (EXPORT | {'exec_doc'}) or imports or re.search(r'^show_doc', src, re.M)): continue   # nbdev's _do_eval
            if any(a.name == '*' for n in nodes if isinstance(n, ast.ImportFrom) for a in n.names): break   # can't tell
            own = _binds(nodes) | {n.arg for n in nodes if isinstance(n, ast.arg)}
            free = sorted({n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own - known)
            exported = bool(d & EXPORT)
            if exported or not free: known |= _binds(list(_top_level(tree)))
            if exported: continue
            mixed = any(not isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)
            if free: yield f"{nb} cell #{i + 1} uses {', '.join(free[:5])}: {_first_line(src)[:60]}"
            elif mixed and not d & {'hide'}:   # runs code during the docs build (it may need state from other cells)
                yield f"{nb} cell #{i + 1} runs during the docs build: {_first_line(src)[:60]}"


def _skip_flags():
    from nbdev.config import get_config
    return set(get_config().tst_flags.split())


def execute():
    """Make build/executed/ current: reuse each notebook's run (runs/test.sh's) if the notebook is unchanged, run the
    others the way nbdev_test does; fail naming every notebook whose execution failed."""
    t0 = time.time()
    files, pkg, flags = nb_run.notebooks(), nb_run.package_hash(), _skip_flags()
    def fresh(f):
        st = nb_run.read_status(f)
        return st is not None and nb_run.executed_path(f).exists() and st['key'] == nb_run.run_key(f.read_bytes(), flags)
    stale = [f for f in files if not fresh(f)]
    if stale and os.environ.get('DOCS_EXECUTE') == '0':   # a quick look at the site: what is there, nothing run
        print(f"docs: DOCS_EXECUTE=0: {len(stale)} notebook(s) not executed since they last changed are rendered with "
              f"old or no outputs: {' '.join(f.stem for f in stale)}", file=sys.stderr)
        files = [f for f in files if f not in stale]
    elif stale:
        workers = int(os.environ.get('NBDEV_WORKERS', 2))
        print(f"docs: executing {len(stale)} of {len(files)} notebook(s) (IN_TEST=1, as nbdev_test; {workers} workers); "
              f"{len(files) - len(stale)} reused from the last run: {' '.join(f.stem for f in stale)}", flush=True)
        nb_run.run_all(stale, n_workers=workers if len(stale) > 1 else 0)
    else: print(f"docs: all {len(files)} notebooks' outputs reused from the last run (runs/nb_run.py)")
    older = [f.stem for f in files if (nb_run.read_status(f) or {}).get('package', pkg) != pkg]
    if older: print(f"docs: note: the package changed since {len(older)} notebook(s) ran ({' '.join(older[:8])}"
                    f"{' ...' if len(older) > 8 else ''}); `python runs/nb_run.py` refreshes their outputs")
    failed = [f for f in files if not (nb_run.read_status(f) or {}).get('passed')]
    for f in failed:
        err = (nb_run.read_status(f) or {}).get('error') or 'no status written (the worker died?)'
        tail = '\n'.join('    ' + line for line in err.strip().splitlines()[-12:])
        print(f"docs: {f.relative_to(Path.cwd())} failed to execute:\n{tail}", file=sys.stderr)
    if failed:
        print(f"docs: {len(failed)} notebook(s) failed to execute, so their pages lack outputs: "
              f"{' '.join(f.name for f in failed)} (rerun one: python runs/nb_run.py --path nbs/NAME.ipynb)", file=sys.stderr)
    print(f"docs: executed notebooks ready in {time.time() - t0:.1f}s")
    return 1 if failed else 0


# The generated "Differences from nanochat" page: every notebook's section of that name, and the reference bugs in them.
DIFF_HEAD = re.compile(r'^##\s+Differences from nanochat\s*$')
# A bullet tells of a bug in the reference when it says "reference bug", or when one of its sentences names nanochat
# (or the reference) and then a failure: a crash, an assertion that stops a run, a count that comes out wrong, a setting it
# loses. Writing "reference bug" in a bullet is the sure way to list it.
BUG = re.compile(r'crash(?:es|ed)\b|would (?:crash|fail)|assertion stops|stops with an assertion|\bforgets\b|catastrophically'
                 r'|truncated|miscount|stops early|slightly negative|one fewer|\bbug\b', re.I)


def is_reference_bug(bullet):
    text = ' '.join(bullet.split())
    if re.search(r'reference bug', text, re.I): return True
    for sentence in re.split(r'(?<=[.!?])\s+', text):   # the failure is told after nanochat is named: it is nanochat's
        who = re.search(r'(?<![\w.`/])nanochat(?![\w./`])|the reference', sentence)   # the project, not `nanochat.x`
        if who and BUG.search(sentence, who.end()): return True
    return False


def _title(cells):
    for c in cells:
        if c['cell_type'] == 'markdown':
            m = re.search(r'^#\s+(.+)$', ''.join(c['source']), re.M)
            if m: return m.group(1).strip()
    return None


def differences_section(cells):
    "The Markdown under a notebook's `## Differences from nanochat` heading, up to the next heading of level 1 or 2."
    out, inside = [], False
    for c in cells:
        if c['cell_type'] != 'markdown': continue
        for line in ''.join(c['source']).splitlines():
            if DIFF_HEAD.match(line): inside = True; continue
            if inside and re.match(r'^#{1,2}\s', line): return '\n'.join(out).strip()
            if inside: out.append(line)
        if inside: out.append('')
    return '\n'.join(out).strip() if inside else None


def bullets(md):
    "Top-level `- ` items of a Markdown list, each with its indented continuation lines."
    items, inside = [], False
    for line in md.splitlines():
        if line.startswith(('- ', '* ')): items.append(line); inside = True
        elif inside and line.startswith(' '): items[-1] += '\n' + line
        elif line.strip(): inside = False        # prose after the list ends its last item
    return items


def differences_page(nbs=Path('nbs')):
    "The notebook of the generated page: its Markdown is built from the notebooks, so it cannot drift from them."
    sections, bugs, without = [], [], []
    for f in nb_run.notebooks(nbs):
        if f.name == 'index.ipynb': continue
        cells = json.loads(f.read_text(encoding='utf-8'))['cells']
        title, md = _title(cells) or f.stem, differences_section(cells)
        link = f'[{f.stem}]({f.name})'
        if md is None: without.append(link); continue
        md = re.sub(r'^(#{3,5})(\s)', r'#\1\2', md, flags=re.M)   # its own subheadings go one level down
        sections.append(f'### {title}\n\nFrom {link}.\n\n{md}')
        bugs += [(b, link) for b in bullets(md) if is_reference_bug(b)]
    head = ('# Differences from nanochat\n\n> Where the course departs from nanochat (a91743c), collected from the '
            '"Differences from nanochat" section that ends each notebook.\n\n'
            'This page is generated by the docs build (`python runs/docs_build.py differences`) from the notebooks, so it '
            'says what they say. Each section links to its notebook, where the reasons and the tests are.')
    bug_md = ('## Reference bugs the course found\n\nBehaviours of nanochat that the notebooks describe as failures: '
              'a crash, an assertion that stops a run, a count that comes out wrong, a setting a checkpoint loses. '
              'Listed automatically: a bullet of a Differences section is here when it names a reference bug or '
              'describes such a failure.\n\n'
              + ('\n'.join(f'{b}\n  (in {link})' for b, link in bugs) if bugs else '_None found in the notebooks._'))
    per_nb = '## Notebook by notebook\n\n' + '\n\n'.join(sections)
    tail = ('## Notebooks without a Differences section\n\n' + ', '.join(without)) if without else ''
    cells = [head, bug_md, per_nb] + ([tail] if tail else [])
    return {'cells': [{'cell_type': 'markdown', 'id': f'diff{i}', 'metadata': {}, 'source': c.splitlines(keepends=True)}
                      for i, c in enumerate(cells)],
            'metadata': {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}},
            'nbformat': 4, 'nbformat_minor': 5}


def differences(dest=None):
    nb = differences_page()
    if dest is None:
        print('\n\n'.join(''.join(c['source']) for c in nb['cells']))
    else: Path(dest).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n', encoding='utf-8')
    return 0


def with_outputs(nb_path: Path):
    """The notebook as it is in nbs/, with the outputs its executed copy has for the same cells (same id, same source):
    the page always shows the current source, and a cell edited since the last run shows no stale output."""
    nb = json.loads(nb_path.read_text(encoding='utf-8'))
    done, n_code, n_out = nb_run.executed_path(nb_path), 0, 0
    ran = {}
    if done.exists():
        ran = {c.get('id', i): c for i, c in enumerate(json.loads(done.read_text(encoding='utf-8'))['cells'])}
    for i, c in enumerate(nb['cells']):
        if c['cell_type'] != 'code': continue
        n_code += 1
        r = ran.get(c.get('id', i))
        if r is not None and ''.join(r['source']) == ''.join(c['source']):
            c['outputs'], c['execution_count'] = r.get('outputs', []), r.get('execution_count')
            n_out += 1
    return nb, n_out == n_code


def assemble(src=SRC, nbs=Path('nbs')):
    """build/docs_src/: nbs/'s site files, every notebook with its outputs from build/executed/, and the generated
    pages. From scratch, so a deleted or renamed notebook leaves no page behind."""
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(nbs, src, symlinks=False,   # _quarto.yml is a symlink to ../_quarto.yml: copy its content
                    ignore=lambda d, names: [n for n in names if n.endswith('.ipynb') or n.startswith('.')])
    partial = []
    for f in nb_run.notebooks(nbs):
        nb, complete = with_outputs(f)
        if not complete: partial.append(f.stem)
        (src / f.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n', encoding='utf-8')
    if partial: print(f"docs: cells changed since their last run have no outputs in: {' '.join(partial)} "
                      "(bash runs/docs.sh runs them unless DOCS_EXECUTE=0)", file=sys.stderr)
    if (src / DIFF_NB).exists(): raise SystemExit(f"docs: nbs/{DIFF_NB} would be overwritten by the generated page")
    differences(src / DIFF_NB)
    return src


def proc():
    "nbdev_proc_nbs into _proc/, naming the cells that break it or make it slow."
    import execnb.shell, nbdev.quarto, nbdev.serve_drv
    nbdev.quarto._ensure_quarto = lambda: None   # nbdev would try `sudo` + curl to install Quarto here
    warnings.filterwarnings('ignore', message='Found cells containing imports')   # named below when it matters
    slow, current, cell_fn, main_fn = [], {}, execnb.shell.CaptureShell.cell, nbdev.serve_drv.main

    def timed_cell(self, cell, *args, **kwargs):
        t = time.perf_counter(); r = cell_fn(self, cell, *args, **kwargs); dt = time.perf_counter() - t
        try: only_imports = all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.parse(cell.source).body)
        except SyntaxError: only_imports = False
        if dt > 1 and not only_imports: slow.append((dt, current['nb'], _first_line(cell.source)))  # imports: ~2 s for torch
        return r

    def named_main(o):
        current['nb'] = f'nbs/{Path(o[0]).name}'   # processed from build/docs_src/; named as the reader knows it
        return main_fn(o)

    execnb.shell.CaptureShell.cell, nbdev.serve_drv.main = timed_cell, named_main
    import nbdev.config, nbdev.doclinks, nbdev.serve
    # nbdev_proc_nbs's steps (nbdev.quarto._pre_docs + nbdev.serve.proc_nbs) on build/docs_src/, in-process (torch is
    # imported once, not per notebook), one notebook at a time so that one that fails does not hide the others
    nbdev.quarto.refresh_quarto_yml()
    nbdev.doclinks._build_modidx()
    src, cache = assemble(), nbdev.config.get_config().config_path / '_proc'
    cache.mkdir(parents=True, exist_ok=True)
    files = nbdev.doclinks.nbglob(src, func=Path, file_glob='', file_re='') + [src / '_quarto.yml']
    failed = []
    for o in files.map(nbdev.serve._proc_file, mtime=cache.stat().st_mtime, cache=cache, path=src).filter():
        try: nbdev.serve_drv.main(o)
        except Exception as e:
            cause = f"\n{type(e.__cause__).__name__}: {e.__cause__}" if e.__cause__ else ''
            print(f"docs: processing {current['nb']} failed:\n{e}{cause}\n", file=sys.stderr)
            failed.append(Path(o[0]).name)
    if failed:
        print(f"{'-' * 72}\ndocs: {len(failed)} notebook(s) could not be processed, so they have no page: {' '.join(failed)}\n"
              "nbdev runs every cell that exports, calls show_doc, or contains an `import` anywhere (even inside an\n"
              "`if` or a function) to render the API docs, and only those cells, so such a cell must not use names\n"
              "defined in other cells. Put test-only imports in the `#| hide` imports cell at the top instead.\n"
              "Cells that nbdev runs this way (#N counts from 1, as in Jupyter):",
              file=sys.stderr)
        found = sorted((l for l in docs_run_cells() if Path(l.split()[0]).name in failed), key=lambda l: ' runs during ' in l)
        for line in found or ['(none found by reading the notebooks; see the errors above)']: print(f"  {line}", file=sys.stderr)
    for dt, nb, line in sorted(slow, reverse=True):
        print(f"docs: slow: {nb}: a cell nbdev runs for the docs took {dt:.1f}s: `{line[:60]}`. It runs because it "
              "contains an import: move the import into the imports cell so the docs build stays fast.", file=sys.stderr)
    return 1 if failed else 0


def localize(root=Path('_docs')):
    "Point the pages at the local KaTeX and font copies and at local API pages; fail if anything still uses a CDN."
    fonts = ''.join(f'@import url(../fonts/source-sans-pro/{w}.css);' for w in (300, 400, 700))
    for f in (root / 'site_libs' / 'themes').glob('*.css'):   # the cosmo theme imports its font from Google Fonts
        s = f.read_text(encoding='utf-8')
        f.write_text(re.sub(r'@import url\(["\']?https://fonts\.googleapis\.com/css2\?family=Source\+Sans\+Pro[^)]*\);?',
                            lambda m: fonts, s), encoding='utf-8')
    # nbdev links `name` to <doc_host><doc_baseurl>/<output-file>#name; output-file is Quarto's page name (common.html)
    cfg = configparser.ConfigParser(); cfg.read('settings.ini'); d = cfg['DEFAULT']
    site = (d.get('doc_host', '') + d.get('doc_baseurl', '')).rstrip('/')
    pages = {}
    for nb in Path('_proc').glob('*.ipynb'):
        m = re.search(r'^output-file:\s*(\S+)', ''.join(json.loads(nb.read_text(encoding='utf-8'))['cells'][0]['source']), re.M)
        if m and (root / f'{nb.stem}.html').exists(): pages[m.group(1)] = f'{nb.stem}.html'
    doclink = re.compile(re.escape(site) + r'/([\w.-]+\.html)(?=[#"\'])') if site else None
    katex = re.compile(r'https://cdn\.jsdelivr\.net/npm/katex@[^/"\']+/dist')
    n_math, n_links = 0, [0]

    def local(m, up):
        if m.group(1) not in pages: return m.group(0)
        n_links[0] += 1
        return f'{up}/{pages[m.group(1)]}'

    for f in root.rglob('*.html'):
        s = f.read_text(encoding='utf-8')
        up = os.path.relpath(root, f.parent).replace(os.sep, '/')   # relative: works from file:// and any base URL
        s2, k = katex.subn(up + '/site_libs/katex', s); n_math += k > 0
        if doclink: s2 = doclink.sub(lambda m: local(m, up), s2)
        if s2 != s: f.write_text(s2, encoding='utf-8')
    cdn = re.compile(r'(?:src|href)\s*=\s*["\']?(?:https?:)?//[^"\'>\s]*(?:jsdelivr|cdnjs|unpkg|googleapis|gstatic)[^"\'>\s]*'
                     r'|@import\s+url\(["\']?(?:https?:)?//[^)]*\)')
    bad = [(f, m.group(0)) for f in sorted(root.rglob('*')) if f.suffix in ('.html', '.css', '.js')
           for m in cdn.finditer(f.read_text(encoding='utf-8', errors='replace'))]
    for f, u in bad: print(f"docs: CDN reference left in {f}: {u}", file=sys.stderr)
    if bad:
        print("docs: the site must load nothing from a CDN (see above)", file=sys.stderr)
        return 1
    print(f"docs: KaTeX served locally on {n_math} page(s) with math; {n_links[0]} API links point at local pages")
    return 0


if __name__ == '__main__':
    steps = {'exec': execute, 'proc': proc, 'localize': localize, 'differences': differences}
    if len(sys.argv) < 2 or sys.argv[1] not in steps or len(sys.argv) > 2 + (sys.argv[1] == 'differences'): sys.exit(__doc__)
    sys.exit(steps[sys.argv[1]](*sys.argv[2:]))
