"""Pipeline benchmark: wall time, training tokens/s and peak memory of every stage of the main job, with base_train's
loop measured again in this same process at the same shape (bench_train's `measure`) as the reference a regression
shows against.

It reads a finished pipeline run (the stage markers and logs under <base>/pipeline) or runs one first:

    python bench/bench_pipeline.py --run --scale tiny      # run the pipeline at tiny scale in a temp dir (~3 min)
    python bench/bench_pipeline.py --run                   # the main job's scale (~25 min on 2 cores)
    python bench/bench_pipeline.py --base-dir ~/.cache/nanochat   # a run that already finished

Tokens/s of a stage is the median of the `tok/sec` (or `tok/s`) values its log printed. Memory is what the pipeline's
launcher measured (39_pipeline): the peak RSS, which counts the library files' pages and so moves with the page cache,
and the peak anonymous memory, the stage's own allocations, the figure to compare between commits. Not a test: it
prints a table.
"""
import argparse, atexit, glob, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

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

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-dir", default=None, help="a base dir whose pipeline has run (default: a new temp dir with --run)")
    p.add_argument("--run", action="store_true", help="run the pipeline first")
    p.add_argument("--scale", default="main", choices=["main", "tiny"])
    p.add_argument("--no-reference", action="store_true", help="skip re-measuring base_train's loop")
    args = p.parse_args()
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
    mb = lambda x: "-" if x is None else f"{x:,.0f}"
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
