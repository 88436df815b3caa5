"""Attention on the CPU: SDPA as nanochat's fallback calls it next to this project's dispatch, which computes causal
self-attention in blocks of 64 queries where that pays (see the attention notebook), in one run.

    python bench/bench_attention.py                # one layer's attention, then whole d4 training steps
    python bench/bench_attention.py --layer-only   # the per-layer table only (about a minute)
    python bench/bench_attention.py --layer-only --heads 6   # ... with d6's 6 heads instead of d4's 4
    python bench/bench_attention.py --mode eager   # no compiled rows (they compile a model per side: minutes)
    NANOCHAT_DTYPE=float32 python bench/bench_attention.py   # the steps in fp32, as on a CPU without bf16 units

A CPU without AVX-512 and bf16 units, on one that has them: the capped recipe at the top of bench_train.py (give it
its own TORCHINDUCTOR_CACHE_DIR).

1. One layer: d4's attention (8 rows, 4 heads of 64) at 256 and 512 tokens, full causal and with a window of half
   the context, in fp32 and, where the bf16 probe finds bf16 units, in bf16 (under autocast, as training computes):
   forward and backward eagerly, forward and backward compiled, and the forward alone without gradients (evaluation,
   a prefill). "SDPA" is nanochat's fallback (`bench_train.nanochat_sdpa_attention`: `is_causal`, or a mask built at
   each call); "project" is `flash_attention._sdpa_attention`, and the column "path" says where it went. The two
   take turns call by call; median of the calls.
2. Whole training steps of the project (base_train's loop, bench_train's flags: d4, batch 8, head_dim 64) with
   nanochat's attention swapped in, next to the project as it ships, taking turns step by step (compiled too: each
   run has its own compiled model), windows L and SSSL. Everything but the attention is the project's, so the ratio
   is what the blocks buy in a step. Both runs check that their loss is finite.
Not a test: it prints tables. Read ratios from one run, on a quiet machine.
"""
import argparse
import atexit
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train  # noqa: E402  (its corpus, tokenizer, flags, interleaved runs and nanochat's SDPA fallback)
import nanochat.flash_attention as fa  # noqa: E402


def layer_ms(fns, q, k, v, mode, reps):
    "Median ms of each function of `fns` on q, k, v in `mode` ('eager', 'compiled': forward and backward; 'forward')"
    times = {name: [] for name in fns}
    for i in range(reps + 2):  # the first two rounds are warm-up (the compiled ones compile there)
        for name, fn in fns.items():
            t0 = time.perf_counter()
            if mode == "forward":
                with torch.no_grad():
                    fn(q, k, v)
            else:
                fn(q, k, v).sum().backward()
            if i >= 2:
                times[name].append(time.perf_counter() - t0)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def path_taken(q, k, v, window, mode):
    "'blocks' or 'SDPA': where the project's dispatch sends this call"
    calls, real = [], fa._blocked_attention
    fa._blocked_attention = lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs)
    try:
        fn = torch.compile(fa._sdpa_attention, backend="eager") if mode == "compiled" else fa._sdpa_attention
        with torch.set_grad_enabled(mode != "forward"):
            fn(q, k, v, True, (window, 0))
    finally:
        fa._blocked_attention = real
        torch._dynamo.reset()
    return "blocks" if calls else "SDPA"


def layer_table(modes, reps, heads=4):
    "Rows: dtype, tokens, window, mode, SDPA ms, project ms, speed-up, path; 8 rows of `heads` heads of 64"
    dtypes = [torch.float32] + ([torch.bfloat16] if torch.bfloat16 in bench_train.PEAKS else [])
    rows = []
    for dtype in dtypes:
        for T in (256, 512):
            for window in (-1, T // 2):
                ctx = torch.autocast("cpu", dtype=dtype) if dtype != torch.float32 else contextlib.nullcontext()
                for mode in modes:
                    q, k, v = (torch.randn(8, heads, T, 64, dtype=dtype, requires_grad=True) for _ in range(3))
                    fns = {"SDPA": lambda q, k, v: bench_train.nanochat_sdpa_attention(q, k, v, True, (window, 0)),
                           "project": lambda q, k, v: fa._sdpa_attention(q, k, v, True, (window, 0))}
                    if mode == "compiled":
                        fns = {name: torch.compile(fn) for name, fn in fns.items()}
                    with ctx:
                        ms = layer_ms(fns, q, k, v, mode, reps)
                        path = path_taken(q, k, v, window, mode)  # resets dynamo: the next row compiles afresh
                    rows.append((str(dtype).removeprefix("torch."), T, window, mode, ms["SDPA"], ms["project"], path))
                    print(f"{rows[-1][0]:8s} {T} tokens, window {window:4d}, {mode:8s}: SDPA {ms['SDPA']:6.2f} ms, "
                          f"project {ms['project']:6.2f} ms ({path}), {ms['SDPA'] / ms['project']:.2f}x", flush=True)
    print("\n| dtype | tokens | window | mode | SDPA ms | project ms | speed-up | project's path |")
    print("|---|---|---|---|---|---|---|---|")
    for dtype, T, window, mode, s, p, path in rows:
        print(f"| {dtype} | {T} | {window if window >= 0 else 'none'} | {mode} | {s:.2f} | {p:.2f} | {s / p:.2f}x "
              f"| {path} |")


def step_table(configs, steps):
    "Whole project steps with nanochat's attention vs as shipped, interleaved: one markdown row per config"
    project = fa._sdpa_attention
    labels = {"nanochat attention": bench_train.nanochat_sdpa_attention, "project": project}

    def use(label, reset):
        fa._sdpa_attention = labels[label]  # a module global: flash_attn_func looks it up at each call
    rows = []
    try:
        for depth, seq, window, comp in configs:
            r = bench_train.measure_interleaved(use, labels, depth, seq, steps, compile_=comp, window=window)
            n, q = r["nanochat attention"], r["project"]
            dtype = str(q["run"].train_dtype).removeprefix("torch.")
            rows.append((depth, seq, window, comp, dtype, n["tok_s"], q["tok_s"], bench_train.row_notes(r)))
            print(f"d{depth} seq {seq} window {window:4s} {'compiled' if comp else 'eager':8s} ({dtype}): nanochat's "
                  f"attention {n['tok_s']:7,.0f} tok/s | project {q['tok_s']:7,.0f} tok/s | "
                  f"{q['tok_s'] / n['tok_s']:.2f}x{rows[-1][-1]}", flush=True)
    finally:
        fa._sdpa_attention = project
    print("\n| model | seq | windows | mode | dtype | nanochat's attention tok/s | project tok/s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for depth, seq, window, comp, dtype, n, q, bad in rows:
        print(f"| d{depth} | {seq} | {window} | {'compiled' if comp else 'eager'} | {dtype} | {n:,.0f} | {q:,.0f} "
              f"| {q / n:.2f}x |{bad}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layer-only", action="store_true", help="only the per-layer table")
    p.add_argument("--mode", choices=("all", "eager", "compiled"), default="all", help="which rows")
    p.add_argument("--reps", type=int, default=15, help="calls per side and row of the layer table")
    p.add_argument("--heads", type=int, default=4, help="heads of 64 in the layer table (4: d4's, 6: d6's)")
    p.add_argument("--steps", type=int, default=40, help="steps per side and row of the step table (10 untimed)")
    args = p.parse_args()
    compiled = args.mode in ("all", "compiled")
    if compiled:
        bench_train.check_inductor_cache()
    bench_train.machine_report()
    modes = [m for m in ("eager", "compiled", "forward") if args.mode == "all" or (m == "compiled") == compiled]
    print(f"\n1. One layer's attention (8 rows, {args.heads} heads of 64): ms per call\n")
    layer_table(modes, args.reps, args.heads)
    if args.layer_only:
        return
    configs = [(4, 256, "L", False), (4, 256, "SSSL", False), (4, 512, "L", False), (4, 512, "SSSL", False),
               (4, 256, "L", True), (4, 512, "L", True)]
    configs = [c for c in configs if args.mode == "all" or c[3] == compiled]
    corpus = bench_train.ensure_corpus()
    base = tempfile.mkdtemp(prefix="bench_attention_")
    atexit.register(shutil.rmtree, base, ignore_errors=True)  # its tokenizer and checkpoints go when the bench ends
    os.environ.update(NANOCHAT_BASE_DIR=base, NANOCHAT_DATA_DIR=corpus)
    bench_train.ensure_tokenizer(base, corpus)
    print("\n2. Whole d4 training steps of the project, with nanochat's attention and as it ships\n")
    step_table(configs, args.steps)


if __name__ == "__main__":
    main()
