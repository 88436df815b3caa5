"""Pipeline benchmark: wall time, training tokens/s and peak memory of every stage of the main job, with base_train's
loop measured again in this same process at the same shape (bench_train's `measure`) as the reference a regression
shows against.

It reads a finished pipeline run (the stage markers and logs under <base>/pipeline) or runs one first:

    python bench/bench_pipeline.py --run --scale tiny      # run the pipeline at tiny scale in a temp dir (~3 min)
    python bench/bench_pipeline.py --run                   # the main job's scale (~25 min on 2 cores)
    python bench/bench_pipeline.py --base-dir ~/.cache/nanochat   # a run that already finished
    python bench/bench_pipeline.py --base-dir DIR --stage rl --variant=--compile=False --variant=--compile=True
                                                           # one stage again, with each variant's flags added

Tokens/s of a stage is the median of the `tok/sec` (or `tok/s`) values its log printed. Memory is what the pipeline's
launcher measured (39_pipeline): the peak RSS, which counts the library files' pages and so moves with the page cache,
and the peak anonymous memory, the stage's own allocations, the figure to compare between commits. Not a test: it
prints a table.

With --stage, one stage of a finished run runs again in processes of their own, started as the pipeline starts it (the
command its marker recorded, the pipeline's environment, the launcher's peaks), once per --variant (flags added to the
stage's own, later flags winning) in each of --rounds rounds, the order rotating each round: the variants take turns,
since a machine's speed drifts over minutes. Each run gets a scratch base dir that links the run's files and holds the
stage's own outputs (checkpoints, report), so the finished run is left as it was. --cold-cache gives each run an empty
inductor cache, as a learner's first run has.
"""
import argparse, atexit, glob, json, os, re, shlex, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

def stage_rows(base_dir):
    "[(stage, seconds, median tok/s or None, peak RSS MB or None, peak anon MB or None)] from a pipeline run's markers"
    rows = []
    for marker in sorted(glob.glob(os.path.join(base_dir, "pipeline", "*.done"))):
        info = json.load(open(marker))
        log = os.path.join(os.path.dirname(marker), "logs", os.path.basename(marker)[:-len(".done")] + ".log")
        rates = []
        if os.path.exists(log):
            for m in re.finditer(r"tok(?:/sec|/s|ens/s)[:=]?\s*([\d,]+(?:\.\d+)?)", open(log, errors="replace").read()):
                rates.append(float(m.group(1).replace(",", "")))
        rows.append((info["stage"], info["seconds"], statistics.median(rates) if rates else None,
                     info.get("peak_rss_mb"), info.get("peak_anon_mb")))  # runs before the anon figure: None
    return rows

def mb(x):
    "A figure in MB for the tables, '-' where it was not measured"
    return "-" if x is None else f"{x:,.0f}"

RERUNNABLE = {  # the stages --stage runs again, and the checkpoints each writes (a source of CHECKPOINT_DIRS, or None)
    "base_train": "base", "mid_train": "mid", "sft": "sft", "rl": "rl",
    "base_eval": None, "mid_eval": None, "sft_eval": None, "rl_eval": None, "transcript": None}

def scratch_base(base_dir, outputs):
    "A temp base dir linking every entry of `base_dir` but the `outputs`, the pipeline's markers and the report"
    scratch = tempfile.mkdtemp(prefix="bench_pipeline_stage_")
    for name in os.listdir(base_dir):
        if name not in [*outputs, "pipeline", "report"]:
            os.symlink(os.path.join(base_dir, name), os.path.join(scratch, name))
    return scratch

def rerun_stage(base_dir, name, variants, rounds, cold_cache):
    "Run stage `name` of the finished run in `base_dir` again per variant and round; print seconds and peaks"
    from nanochat.common import malloc_env
    from nanochat.dataset import get_data_dir
    from nanochat.scripts.pipeline import Stage, start_stage
    from nanochat.checkpoint_manager import CHECKPOINT_DIRS
    from bench_train import in_turn
    if name not in RERUNNABLE:
        raise SystemExit(f"--stage={name!r}: use one of {sorted(RERUNNABLE)}")
    # what the stage writes under the base dir besides the report: each rerun writes it in its scratch dir
    outputs = [CHECKPOINT_DIRS[RERUNNABLE[name]]] if RERUNNABLE[name] else []
    markers = glob.glob(os.path.join(base_dir, "pipeline", f"*_{name}.done"))
    if not markers:
        raise SystemExit(f"no finished {name} stage under {base_dir}/pipeline: run the pipeline there first")
    command = shlex.split(json.load(open(markers[0]))["command"])  # the stage as it ran: python -m module flags...
    module, flags = command[command.index("-m") + 1], command[command.index("-m") + 2:]
    os.environ["NANOCHAT_BASE_DIR"] = base_dir
    data_dir = get_data_dir("local")  # where the run's data stage built the corpus, as run_stage passes it
    results = {v: [] for v in variants}
    for r in range(rounds):
        for v in in_turn(variants, r):
            scratch = scratch_base(base_dir, outputs)
            env = {**os.environ, "PYTHONUNBUFFERED": "1", "NANOCHAT_DATA_DIR": data_dir, "NANOCHAT_BASE_DIR": scratch}
            if cold_cache:
                env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch, "inductor_cache")
            t0 = time.time()
            proc, peak_mb = start_stage(Stage(name, module, [*flags, *shlex.split(v)]), malloc_env(env))
            lines = list(proc.stdout)
            rc = proc.wait()
            seconds = time.time() - t0
            peak, anon = peak_mb()
            shutil.rmtree(scratch, ignore_errors=True)  # the links go, the run's files stay
            if rc != 0:
                raise SystemExit(f"{name} {v!r} failed (exit code {rc}):\n" + "".join(lines[-30:]))
            results[v].append((seconds, peak, anon))
            print(f"round {r + 1}: {name} {v or '(as in the run)'}: {seconds:.1f} s, peak RSS {mb(peak)} MB, "
                  f"anon {mb(anon)} MB", flush=True)
    print(f"\n| {name}: variant | seconds (each round) | peak RSS MB | peak anon MB |")
    print("|---|---|---|---|")
    for v, rows in results.items():
        seconds = ", ".join(f"{row[0]:.1f}" for row in rows)
        peaks = ", ".join(mb(row[1]) for row in rows)
        anons = ", ".join(mb(row[2]) for row in rows)
        print(f"| {v or '(as in the run)'} | {seconds} | {peaks} | {anons} |")

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-dir", default=None, help="a base dir whose pipeline has run (default: a new temp dir with --run)")
    p.add_argument("--run", action="store_true", help="run the pipeline first")
    p.add_argument("--scale", default="main", choices=["main", "tiny"])
    p.add_argument("--no-reference", action="store_true", help="skip re-measuring base_train's loop")
    p.add_argument("--stage", default=None, help="run this stage of the finished run again (see the docstring)")
    p.add_argument("--variant", action="append", default=None,
                   help="flags added to the stage's, one run each (repeat; '' for the stage as it ran)")
    p.add_argument("--rounds", type=int, default=1, help="rounds of --stage's variants, taking turns")
    p.add_argument("--cold-cache", action="store_true", help="an empty inductor cache for each --stage run")
    args = p.parse_args()
    if args.stage:
        if not args.base_dir:
            raise SystemExit("--stage needs --base-dir: a base dir whose pipeline has run")
        rerun_stage(args.base_dir, args.stage, args.variant or [""], args.rounds, args.cold_cache)
        return
    base = args.base_dir or tempfile.mkdtemp(prefix="bench_pipeline_")
    if args.run:
        t0 = time.time()
        env = {**os.environ, "NANOCHAT_BASE_DIR": base}
        r = subprocess.run([sys.executable, "-m", "nanochat.scripts.pipeline", f"--scale={args.scale}"], env=env)
        print(f"pipeline exit code {r.returncode} after {time.time() - t0:.0f}s (base dir {base})")
    rows = stage_rows(base)
    if not rows:
        print(f"no finished pipeline stages under {base}/pipeline: run with --run, or point --base-dir at a finished run")
        return
    ref = None
    cfg = json.load(open(os.path.join(base, "pipeline", "config.json")))
    from nanochat.scripts.pipeline import SCALES
    s = SCALES[cfg["scale"]]
    if s["dbs"] != 8 and not args.no_reference:  # bench_train's loop trains 8 rows a step: not this scale's shape
        print(f"(no reference: bench_train's loop runs 8 rows a step, the {cfg['scale']} scale {s['dbs']})")
    elif not args.no_reference and any(name == "base_train" for name, *_ in rows):
        import bench_train  # the same loop, same shape, measured now: a slow stage shows up against it
        scratch = tempfile.mkdtemp(prefix="bench_pipeline_ref_")  # its checkpoints must not land in the run's base dir
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        os.symlink(os.path.join(base, "tokenizer"), os.path.join(scratch, "tokenizer"))
        from nanochat.dataset import get_data_dir
        os.environ["NANOCHAT_BASE_DIR"] = base
        data_dir = get_data_dir()
        os.environ.update(NANOCHAT_BASE_DIR=scratch, NANOCHAT_DATA_DIR=data_dir)
        ref = bench_train.measure(s["depth"], s["seq"], False, 20)["tok_s"]
    load = os.getloadavg()[0]
    print(f"\nload average {load:.2f}" + ("  (busy machine: numbers are low)" if load > 1.5 else ""))
    print("| stage | wall s | tok/s (median in its log) | reference tok/s (same run) | peak RSS (MB) "
          "| peak anon (MB) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, secs, rate, peak, anon in rows:
        r = f"{ref:,.0f} (base_train's loop, 20 steps)" if (name == "base_train" and ref) else "-"
        print(f"| {name} | {secs:.1f} | {f'{rate:,.0f}' if rate else '-'} | {r} | {mb(peak)} | {mb(anon)} |")
    peak = max((row[3] for row in rows if row[3] is not None), default=None)
    anon = max((row[4] for row in rows if row[4] is not None), default=None)
    print(f"| **total** | **{sum(row[1] for row in rows):.1f}** | | | **{mb(peak)}** | **{mb(anon)}** |")

if __name__ == "__main__":
    main()
