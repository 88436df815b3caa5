"""Memory of CPU training under glibc's allocator settings: base_train's loop at the main job's shape, each setting in
processes of its own, their peak memory as the pipeline measures a stage's, and their speed.

    python bench/bench_memory.py                         # d4 seq 256, 30 steps, 3 rounds of the settings
    python bench/bench_memory.py --dtype float32         # in fp32 where the policy would train in bf16
    python bench/bench_memory.py --steps 60 --reps 3 --corpus DIR

The settings (common's "Memory a CPU step gets back"):
- glibc defaults: `compute_init` with `keep_freed_memory` switched off, as nanochat runs;
- freed memory kept: `compute_init` as it is (`keep_freed_memory()`), started with glibc's default tcache. The
  baseline: a script started by hand runs so;
- kept, tcache off: the same, started with `malloc_env()` (GLIBC_TUNABLES=glibc.malloc.tcache_count=0), as the
  pipeline starts every stage.
Each run is `nanochat.scripts.base_train`'s `train` at d4, seq 256, batch 8 (bench_train's flags) with a validation
of 65,536 tokens every 10 steps (the main job validates every 50): a fresh process started by the pipeline's
launcher (`start_stage`), which reports its peak RSS and its peak anonymous memory (RssAnon sampled every 20 ms).
The anonymous peak is the figure to compare: RSS adds the library files' pages, which move with the page cache.
Speed is the median step time after bench_train's warm-up steps. A process cannot switch glibc's tcache (glibc reads
its settings at start), so unlike bench_train's rows the speeds come from different processes, and a machine's
speed drifts over minutes (measured here: one setting at 6,652 tok/s, then 4,034 four minutes later): the settings
take turns in rounds, the order rotating each round, and a setting's speed is read as the median of its ratios to
the baseline's run of the same round. Not a test: it prints a table.
"""
import argparse, json, os, statistics, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SETTINGS = ["glibc defaults", "freed memory kept", "kept, tcache off"]
BASELINE = "freed memory kept"
EVAL = ["--eval-every=10", "--eval-tokens=65536"]


def child(setting, steps):
    "One run in this process: print a RESULT line with its speed and final loss"
    import nanochat.common as common
    if setting == "glibc defaults":
        common.keep_freed_memory = lambda: False  # compute_init calls it through the module: glibc's defaults stay
    import bench_train
    r = bench_train.measure(4, 256, False, steps, extra=EVAL)
    print("RESULT " + json.dumps(dict(tok_s=r["tok_s"], loss=float(r["loss"]), kept=common.freed_memory_kept(),
                                      dtype=str(r["run"].train_dtype).replace("torch.", ""))), flush=True)


def run_setting(setting, steps, env):
    "Run `setting` in a fresh process: (its RESULT dict, peak RSS MB, peak anonymous MB)"
    from nanochat.common import malloc_env
    from nanochat.scripts.pipeline import Stage, start_stage
    env = {k: v for k, v in env.items() if k != "GLIBC_TUNABLES"}  # glibc's defaults, whatever this shell set
    env["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in [env.get("PYTHONPATH")] if p])
    if setting == "kept, tcache off":
        env = malloc_env(env)
    proc, peak_mb = start_stage(Stage(setting, "bench_memory", ["--child", setting, f"--steps={steps}"]), env)
    lines = list(proc.stdout)
    rc = proc.wait()
    peak, anon = peak_mb()
    result = [json.loads(line[len("RESULT "):]) for line in lines if line.startswith("RESULT ")]
    if rc != 0 or not result:
        raise SystemExit(f"the run '{setting}' failed (exit code {rc}):\n" + "".join(lines[-30:]))
    return result[0], peak, anon


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=30, help="training steps per run")
    p.add_argument("--reps", type=int, default=3, help="rounds: runs of each setting")
    p.add_argument("--dtype", default="", help="NANOCHAT_DTYPE for the runs (default: the precision policy decides)")
    p.add_argument("--corpus", default=None, help="a directory of shards (default: the project's offline corpus)")
    p.add_argument("--child", default=None, choices=SETTINGS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.steps)
    import bench_train
    print(bench_train.cpu_report())
    corpus = bench_train.ensure_corpus(args.corpus)
    base = tempfile.mkdtemp(prefix="bench_memory_")
    env = {**os.environ, "NANOCHAT_BASE_DIR": base, "NANOCHAT_DATA_DIR": corpus}
    if args.dtype:
        env["NANOCHAT_DTYPE"] = args.dtype
    os.environ.update(NANOCHAT_BASE_DIR=base, NANOCHAT_DATA_DIR=corpus)
    bench_train.ensure_tokenizer(base, corpus)
    runs = {s: [] for s in SETTINGS}
    for rep in range(args.reps):
        for setting in bench_train.in_turn(SETTINGS, rep):
            result, peak, anon = run_setting(setting, args.steps, env)
            runs[setting].append((result, peak, anon))
            print(f"  {setting}: peak anon {anon:,.0f} MB, RSS {peak:,.0f} MB, {result['tok_s']:,.0f} tok/s, "
                  f"{result['dtype']}, loss {result['loss']:.4f}", flush=True)
    med = statistics.median
    base_anon = med([a for _, _, a in runs[BASELINE]])
    print(f"\nd4, seq 256, batch 8, {args.steps} steps with a validation every 10, {args.reps} runs of each setting "
          f"(medians, the runs in brackets; speed vs kept: the median of the rounds' ratios, each round's settings "
          f"one after the other, and their range)")
    print("| setting | dtype | peak anon (MB) | vs kept | peak RSS (MB) | tok/s | speed vs kept | final loss |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for setting in SETTINGS:
        rs = runs[setting]
        anons, toks = [a for _, _, a in rs], [r["tok_s"] for r, _, _ in rs]
        ratios = [r["tok_s"] / b["tok_s"] for (r, _, _), (b, _, _) in zip(rs, runs[BASELINE])]
        each = lambda xs, f: " (" + ", ".join(f.format(x) for x in xs) + ")"
        print(f"| {setting} | {rs[0][0]['dtype']} | {med(anons):,.0f}{each(anons, '{:,.0f}')} "
              f"| {med(anons) - base_anon:+,.0f} MB | {med([p for _, p, _ in rs]):,.0f} "
              f"| {med(toks):,.0f}{each(toks, '{:,.0f}')} | {med(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) "
              f"| {med([r['loss'] for r, _, _ in rs]):.4f} |")

if __name__ == "__main__":
    main()
