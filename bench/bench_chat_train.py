"""Chat-stage training throughput (CPU): mid_train and chat_sft tokens/s at d4 next to base_train's in the same run,
the packed conversation loader's throughput against what midtraining consumes (goal: >= 20x), and the share of
supervised tokens in each stage's batches.

Setup as bench_train.py: the project's offline corpus and a vocab-4096 BPE tokenizer in a temporary base dir, d4, head_dim 64,
window L, seq 256, 8 rows per micro-batch, 2048 tokens per step (base and mid), eager. base_train runs first (its
checkpoint is the one midtrained), then mid_train on the default mixture (offline: the synthetic stand-ins, since the
temporary base dir has no task data), then chat_sft with nanochat's batch (4 conversations per micro-batch, 32 per
step). Throughput is the median step after warm-up. Where the CPU has bf16 units, SFT trains in bf16 with batch
widths rounded up to a multiple of 64 (`StageRun.pad_multiple`), and the bench runs it a second time the way nanochat
does on a CPU (fp32, each batch padded to its longest row, `NANOCHAT_DTYPE=float32`); compare supervised tokens/s,
since the rounded-up widths forward more padding. Not a test: it prints a table.

    python bench/bench_chat_train.py            # ~3-5 min on 2 cores (the tokenizer is trained once, ~1 min)
    python bench/bench_chat_train.py --steps 10 --threads 1   # on a shared machine one thread is steadier
"""
import argparse, atexit, os, shutil, tempfile, time
import torch
from bench_train import ensure_corpus, ensure_tokenizer

SEQ, ROWS, DEPTH = 256, 8, 4
MODEL_FLAGS = ["--device-type=cpu", "--compile=False", f"--max-seq-len={SEQ}", f"--device-batch-size={ROWS}",
               f"--total-batch-size={ROWS * SEQ}", "--eval-every=-1", "--model-tag=bench"]

def median_dt(stamps):
    dts = sorted(b - a for a, b in zip(stamps[2:], stamps[3:]))  # skip the warm-up steps
    return dts[len(dts) // 2]

def bench_base(steps):
    from nanochat.common import parse_config
    from nanochat.scripts.base_train import TrainConfig, train
    stamps = []
    flags = MODEL_FLAGS + [f"--depth={DEPTH}", "--head-dim=64", "--window-pattern=L", f"--num-iterations={steps}",
                           "--core-metric-every=-1", "--sample-every=-1"]
    run = train(parse_config(TrainConfig, flags), on_step=lambda r: stamps.append(time.time()))
    return ROWS * SEQ / median_dt(stamps)

def bench_mid(steps):
    from nanochat.common import parse_config
    from nanochat.scripts.mid_train import MidConfig, train
    stamps = []
    run = train(parse_config(MidConfig, MODEL_FLAGS + [f"--num-iterations={steps}"]),
                on_step=lambda r: stamps.append(time.time()))
    return ROWS * SEQ / median_dt(stamps), run

def bench_sft(steps, dtype=None):
    "chat_sft's positions/s (padding included) and supervised tokens/s; `dtype` overrides the precision policy"
    import nanochat.scripts.chat_sft as sft
    from nanochat.common import parse_config
    counts, stamps = [], []
    if dtype is not None:
        os.environ["NANOCHAT_DTYPE"] = dtype  # read when the run is set up
    original = sft.sft_data_generator
    def counting(*args, **kwargs):  # count the positions and supervised targets of every training micro-batch
        for x, y in original(*args, **kwargs):
            counts.append((x.numel(), int((y != -1).sum())))
            yield x, y
    sft.sft_data_generator = counting
    try:
        flags = ["--device-type=cpu", "--source=mid", "--model-tag=bench", f"--num-iterations={steps}",
                 "--eval-every=-1", "--eval-metrics-every=-1", f"--max-seq-len={SEQ}"]
        run = sft.train(parse_config(sft.SFTConfig, flags), on_step=lambda r: stamps.append((time.time(), len(counts))))
    finally:
        sft.sft_data_generator = original
        os.environ.pop("NANOCHAT_DTYPE", None)
    per_step = [(t1 - t0, sum(p for p, _ in counts[a:b]), sum(s for _, s in counts[a:b]))
                for (t0, a), (t1, b) in zip(stamps[2:], stamps[3:])]
    dt = sum(d for d, _, _ in per_step)
    return sum(p for _, p, _ in per_step) / dt, sum(s for _, _, s in per_step) / dt, run

def loader_throughput(make_loader, seconds=5.0):
    "Tokens/s of a loader's (inputs, targets, ...) batches, after the first batch (the buffer fill)"
    loader = make_loader()
    next(loader)
    n, t0 = 0, time.time()
    while time.time() - t0 < seconds:
        n += next(loader)[0].numel()
    return n / (time.time() - t0)

def supervised_share(make_loader, batches=20):
    "Share of input positions whose target is not -1"
    loader, kept, total = make_loader(), 0, 0
    for _ in range(batches):
        x, y = next(loader)[:2]
        kept, total = kept + int((y != -1).sum()), total + y.numel()
    return kept / total

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = p.parse_args()
    if args.threads: torch.set_num_threads(args.threads)
    corpus = ensure_corpus()
    base = tempfile.mkdtemp(prefix="bench_chat_")
    atexit.register(shutil.rmtree, base, ignore_errors=True)  # its tokenizer and checkpoints go when the bench ends
    os.environ.update(NANOCHAT_BASE_DIR=base, NANOCHAT_DATA_DIR=corpus)
    ensure_tokenizer(base, corpus)
    load = os.getloadavg()[0]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {load:.2f}"
          + ("  (busy machine: numbers are low)" if load > 1.5 else ""), flush=True)
    base_tok_s = bench_base(args.steps)
    mid_tok_s, mid = bench_mid(args.steps)
    sft_pos_s, sft_sup_s, sft = bench_sft(args.steps)
    sft_fp32 = bench_sft(args.steps, "float32") if sft.train_dtype != torch.float32 else None

    from nanochat.dataloader import conversation_bestfit_loader
    from nanochat.scripts.chat_sft import sft_data_generator
    tok, mix, sft_mix = mid.tokenizer, mid.train_ds, sft.train_ds
    packed = lambda **kw: (lambda: conversation_bestfit_loader(tok, mix, ROWS, SEQ, device="cpu", **kw))
    # the widths training pads to (a multiple of 64 where SFT trains in bf16): the loader makes the positions it counts
    padded = lambda: sft_data_generator(tok, sft_mix, 4, "cpu", max_tokens=SEQ, pad_multiple=sft.pad_multiple)
    mid_loader_s = loader_throughput(packed())
    sft_loader_s = loader_throughput(padded)
    share = {"mid (a91743c: every token)": supervised_share(packed()),
             "mid --pack=pad": supervised_share(packed(pad=True)),
             "mid --loss-mask": supervised_share(packed(mask=True)),
             "mid --pack=pad --loss-mask": supervised_share(packed(pad=True, mask=True)),
             "sft (padded rows, assistant tokens)": supervised_share(padded, batches=80)}

    print(f"\nd{DEPTH}, seq {SEQ}, eager, CPU ({args.steps} steps each, median step after warm-up)")
    print("| stage | training tokens/s | vs base_train | loader tokens/s | loader / training |")
    print("|---|---|---|---|---|")
    print(f"| base_train | {base_tok_s:,.0f} | 1.00x | - | - |")
    ratio = mid_loader_s / mid_tok_s
    print(f"| mid_train (packed rows) | {mid_tok_s:,.0f} | {mid_tok_s / base_tok_s:.2f}x | {mid_loader_s:,.0f} | "
          f"{ratio:,.0f}x ({'meets' if ratio >= 20 else 'MISSES'} the 20x goal) |")
    print(f"| chat_sft (positions, padding included) | {sft_pos_s:,.0f} | {sft_pos_s / base_tok_s:.2f}x "
          f"| {sft_loader_s:,.0f} | {sft_loader_s / sft_pos_s:,.0f}x |")
    print(f"| chat_sft (supervised tokens only) | {sft_sup_s:,.0f} | {sft_sup_s / base_tok_s:.2f}x | - | - |")
    if sft_fp32 is not None:
        print(f"| chat_sft as nanochat on a CPU (fp32, padded to the longest): positions | {sft_fp32[0]:,.0f} "
              f"| {sft_fp32[0] / base_tok_s:.2f}x | - | - |")
        print(f"| chat_sft as nanochat on a CPU: supervised tokens | {sft_fp32[1]:,.0f} | {sft_fp32[1] / base_tok_s:.2f}x "
              f"| - | - |")
    dtype = str(sft.train_dtype).removeprefix("torch.")
    print(f"\nchat_sft trains in {dtype} here, batch widths rounded up to a multiple of {sft.pad_multiple}"
          + (f"; supervised tokens/s {sft_sup_s / sft_fp32[1]:.2f}x the fp32 run's" if sft_fp32 is not None else ""))
    print("\n| batches | supervised share of positions |")
    print("|---|---|")
    for name, s in share.items(): print(f"| {name} | {100 * s:.1f}% |")
    print(f"\nmixtures: mid {len(mix):,} rows, sft {len(sft_mix):,} rows (see the printed mixture lines above)")

if __name__ == "__main__":
    main()
