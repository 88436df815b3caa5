"""`nbdev_test`, which also keeps what the notebooks printed and drew: the docs build renders those outputs.

    python runs/nb_run.py [--path nbs/12_engine.ipynb | --file_re '^0[0-4]_'] [--n_workers 2] [--timing] [--flags gpu]
    python runs/nb_run.py --learner [--path ...]   # as a learner's Run All: IN_TEST unset, the full loops

Runs every notebook once the way `nbdev_test` (nbdev 2.4.14) does: the same notebooks (nbglob, `.notest`), in
parallel worker processes, each in a fresh execnb `CaptureShell` with `IN_TEST=1`, cwd nbs/, skipping `#| eval: false`
cells and cells flagged with settings.ini's `tst_flags` (`gpu`, `slow`) unless `--flags` names them, stopping a
notebook at its first exception. It prints what nbdev_test prints ("Success.", or the failing notebooks under
"nbdev Tests Failed On The Following Notebooks:", then exits 1), so runs/test.sh counts passes the same way.

What it changes: each notebook runs in a new process, as in a learner's new kernel (nbdev_test's workers run one
notebook after another, and a notebook's result could depend on which ran before it in its worker).

What it adds: each notebook, with the outputs of the cells that ran, is written to build/executed/nbs/ (git-ignored;
nbs/ is never touched, so the committed notebooks stay clean) with a status file in build/executed/status/ (passed,
seconds, the error, the hash of the notebook and that of the package it ran against). `runs/docs_build.py exec`
reuses those outputs when the notebook is unchanged and runs only the notebooks that changed since.
`nbdev_test` itself is unchanged and still works as before.

`--learner` runs the notebooks closer to a learner's Restart and Run All: `IN_TEST` unset, so every loop runs at its
full size (all 37 notebooks took 6 min on two cores at 1a6eccd, 24_base_train, 29_chat_rl and 39_pipeline about 1.5
min each), into build/learner/ by default. A test that holds only for the shrunken sizes fails there. Unlike
JupyterLab it still skips the `#| eval: false` cells (the heavy commands they show) and those with a test flag
(`--flags slow` runs those). Not part of runs/test.sh, which has CI's time budget.
"""
import hashlib, json, os, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / 'build' / 'executed'


def package_hash(root=ROOT):
    "Hash of the exported package: a notebook's outputs depend on it as much as on the notebook itself."
    h = hashlib.sha256()
    for f in sorted((root / 'nanochat').rglob('*.py')):
        h.update(str(f.relative_to(root)).encode()); h.update(f.read_bytes())
    return h.hexdigest()[:16]


def run_key(src_bytes, flags):
    """What a reused execution must match: the notebook's bytes and the flags of the cells it skipped. The package is
    recorded (`package`) but not part of the key: runs/test.sh runs everything afresh anyway, and others editing the
    package during a run must not force the docs build to run every notebook a second time."""
    return f"{hashlib.sha256(src_bytes).hexdigest()[:16]}-{','.join(sorted(flags))}"


def status_path(fn, out=OUT): return Path(out) / 'status' / f'{Path(fn).stem}.json'
def executed_path(fn, out=OUT): return Path(out) / 'nbs' / Path(fn).name


def read_status(fn, out=OUT):
    try: return json.loads(status_path(fn, out).read_text())
    except (OSError, ValueError): return None


def _atomic_write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    tmp.write_text(text, encoding='utf-8')
    os.replace(tmp, path)


def run_nb(fn, skip_flags=None, force_flags=None, do_print=False, showerr=True, basepath=None, out=OUT, pkg='',
           learner=False):
    """`nbdev.test.test_nb`, plus: the notebook with its outputs goes to `out`/nbs and its status to `out`/status.
    `learner`: IN_TEST unset, as in JupyterLab"""
    from fastcore.foundation import L
    from fastcore.basics import str2bool
    from fastcore.imports import IN_NOTEBOOK
    from fastcore.xtras import working_directory
    from execnb.nbio import dict2nb, nb2str
    from execnb.shell import CaptureShell
    from nbdev.process import NBProcessor, nb_lang
    from nbdev.frontmatter import FrontmatterProc
    fn = Path(fn)
    if basepath: sys.path.insert(0, str(basepath))
    if learner: os.environ.pop("IN_TEST", None)
    elif not IN_NOTEBOOK: os.environ["IN_TEST"] = '1'
    flags = set(L(skip_flags)) - set(L(force_flags))
    src = fn.read_bytes()                       # read once: the hash names exactly the text that ran
    saved = dict2nb(json.loads(src))            # the copy written out: directives kept, outputs filled in below
    nb = dict2nb(json.loads(src)); nb['path_'] = str(fn)
    for i, c in enumerate(nb.cells): c['orig_idx_'] = i   # NBProcessor drops the title cell: map back by index
    nb = NBProcessor(nb=nb, procs=FrontmatterProc, process=True).nb
    key = run_key(src, flags | ({'learner'} if learner else set()))  # outputs of full loops are not the tests'
    status = dict(notebook=fn.name, key=key, package=pkg, passed=True, seconds=0.0, error=None, learner=learner)
    fm = getattr(nb, 'frontmatter_', {})
    if str2bool(fm.get('skip_exec', False)) or nb_lang(nb) != 'python':
        status['skipped'] = True
        _atomic_write(executed_path(fn, out), nb2str(saved)); _atomic_write(status_path(fn, out), json.dumps(status))
        return True, 0

    def _no_eval(cell):   # nbdev.test.test_nb's, verbatim
        if cell.cell_type != 'code': return True
        if 'nbdev_export' + '(' in cell.source: return True
        direc = getattr(cell, 'directives_', {}) or {}
        if direc.get('eval:', [''])[0].lower() == 'false': return True
        return flags & direc.keys()

    count = [0]
    def _keep(cell):       # after each cell that ran: its outputs and a Jupyter-style execution count
        count[0] += 1
        dst = saved.cells[cell.orig_idx_]
        dst['outputs'], dst['execution_count'] = cell.get('outputs', []), count[0]
        for o in dst['outputs']:
            if 'execution_count' in o: o['execution_count'] = count[0]

    start = time.time()
    k = CaptureShell(fn)
    if do_print: print(f'Starting {fn}')
    try:
        with working_directory(fn.parent):
            k.run_all(nb, exc_stop=True, preproc=_no_eval, postproc=_keep)
            res = True
    except BaseException:
        tb = k.prettytb(fname=fn)
        if showerr: sys.stderr.write(tb + '\n')
        res = False
        status['error'] = tb[-4000:]
    status.update(passed=res, seconds=round(time.time() - start, 2))
    _atomic_write(executed_path(fn, out), nb2str(saved))
    _atomic_write(status_path(fn, out), json.dumps(status))
    if do_print: print(f'- Completed {fn}')
    return res, time.time() - start


def notebooks(path=None, ignore_fname='.notest', **kwargs):
    "The notebooks nbdev_test would test, sorted, absolute."
    from nbdev.doclinks import nbglob
    from nbdev.test import _keep_file
    files = nbglob(path, as_path=True, **kwargs)
    return [f.absolute() for f in sorted(files) if _keep_file(f, ignore_fname)]


def run_all(files, flags='', n_workers=None, do_print=False, pause=0.01, out=OUT, learner=False):
    "Run `files` like nbdev_test's loop, each in a new process; returns [(passed, seconds)] in the order of `files`."
    from multiprocessing import get_context
    from fastcore.parallel import ProcessPoolExecutor, num_cpus
    from fastcore.xtras import working_directory
    from nbdev.config import get_config
    cfg = get_config()
    skip_flags, force_flags = cfg.tst_flags.split(), flags.split()
    if n_workers is None: n_workers = 0 if len(files) == 1 else min(num_cpus(), 8)
    # a worker reused from earlier notebooks carries their state (a CPU library already chosen by shape, so an env pin
    # set later is too late; probes already timed): 29_chat_rl's RL gain was 0.383 alone, 0.589 after 24-28.
    # A forkserver's children start from a clean process.
    ctx = get_context('spawn' if os.name == 'nt' else 'forkserver')
    if os.name != 'nt':  # imported once, in the server: each child starts with them loaded, none of a notebook's code
        # run (14 small notebooks on 2 workers: 33 s instead of 54)
        ctx.set_forkserver_preload(['torch', 'matplotlib.pyplot', 'IPython', 'execnb.shell', 'nbdev.process'])
    wd = cfg.nbs_path
    with working_directory(wd if (wd and wd.exists()) else os.getcwd()):
        with ProcessPoolExecutor(n_workers, pause=pause, mp_context=ctx, max_tasks_per_child=1) as ex:
            return list(ex.map(run_nb, files, skip_flags=skip_flags, force_flags=force_flags,
                               basepath=cfg.config_path, do_print=do_print, out=Path(out).absolute(),
                               pkg=package_hash(), learner=learner))


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--path', default=None, help='a notebook name or glob to test (default: all of nbs/)')
    p.add_argument('--flags', default='', help='space separated list of test flags to run that are normally ignored')
    p.add_argument('--n_workers', type=int, default=None, help='number of worker processes')
    p.add_argument('--timing', action='store_true', help='time each notebook to see which are slow')
    p.add_argument('--do_print', action='store_true', help='print start and end of each notebook')
    p.add_argument('--pause', type=float, default=0.01, help='pause (s) between notebooks to avoid race conditions')
    p.add_argument('--ignore_fname', default='.notest', help='a file of this name makes its siblings ignored')
    p.add_argument('--file_re', default=None, help="only the notebooks whose name matches (as nbdev_test's --file_re)")
    p.add_argument('--out', default=None,
                   help='where the notebooks run and their status go (build/executed; with --learner build/learner)')
    p.add_argument('--learner', action='store_true', help="IN_TEST unset: every loop at a learner's full size")
    a = p.parse_args(argv)
    out = a.out or str(ROOT / 'build' / ('learner' if a.learner else 'executed'))
    files = notebooks(a.path, a.ignore_fname, **({'file_re': a.file_re} if a.file_re else {}))
    if not files:  # a path or glob that matched nothing, or a .notest: nothing was tested, which is no pass
        print('No files were eligible for testing', file=sys.stderr)
        sys.exit(1)
    results = run_all(files, a.flags, a.n_workers, a.do_print, a.pause, out, a.learner)
    passed, times = zip(*results)
    # the count runs/test.sh reads: what ran, not what `ls` finds (a .notest, a subfolder)
    print(f"nb_run: {sum(passed)} passed, {len(files) - sum(passed)} failed of {len(files)} notebooks", flush=True)
    if all(passed): print("Success.")
    else:   # nbdev_test's words and layout: runs/test.sh counts the names under the fence
        failed = '\n\t'.join(f.name for ok, f in zip(passed, files) if not ok)
        sys.stdout.flush()
        sys.stderr.write(f"\nnbdev Tests Failed On The Following Notebooks:\n{'=' * 50}\n\t{failed}\n")
        return 1
    if a.timing:
        for i, t in sorted(enumerate(times), key=lambda o: o[1], reverse=True): print(f"{files[i].name}: {int(t)} secs")
    return 0


if __name__ == '__main__':
    # run as the module `nb_run`, not `__main__`: the workers find run_nb by module name, and IPython (the notebooks'
    # shell) replaces sys.modules['__main__'] in a worker once it has run a notebook
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import nb_run
    sys.exit(nb_run.main())
