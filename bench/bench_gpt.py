"""GPT forward+backward throughput on the CPU, eager vs torch.compile, against this machine's matmul peak.

    python bench/bench_gpt.py                      # d4, d6 at T=256 and T=512, eager and compiled
    python bench/bench_gpt.py --no-compile         # eager only (skips ~10-80 s of compilation per config)
    python bench/bench_gpt.py --depths 4 --seq-lens 256 --steps 10

Tiny CPU configs: vocab 4096, head_dim 64, window pattern SSSL, fp32, 2048 tokens per step (batch = 2048 / T).
The baseline is the fp32 matmul peak measured in the same run (best of 1024^3 and 2048^3 matmuls, measured before
and after the models), so "MFU" = achieved model FLOP/s (GPT.estimate_flops x tokens/s) / measured peak.
Eager and compiled steps of one config are interleaved, so both see the same machine load; the table gives the
median and the best step. Also reports single-token decode with a KV cache (batch 1, d4, T=256) on 1 thread and on torch's default.

On a shared machine every other busy process slows 2-thread OpenMP kernels a lot (threads wait for a descheduled
partner), so compare rows of one run, and rerun when the load average printed at the top is high.
"""
import argparse
import os
import statistics
import time

import torch
from nanochat.engine import KVCache

from nanochat.common import measure_matmul_flops
from nanochat.gpt import GPT, GPTConfig


def make_model(depth, seq_len, vocab_size=4096, head_dim=64, window_pattern='SSSL'):
    config = GPTConfig.from_depth(depth, vocab_size=vocab_size, sequence_len=seq_len, head_dim=head_dim,
                                  window_pattern=window_pattern)
    with torch.device('meta'):
        model = GPT(config)
    model.to_empty(device='cpu')
    torch.manual_seed(0)
    model.init_weights()
    with torch.no_grad():  # a trained-looking model: non-zero projections so every matmul does real work
        for block in model.transformer.h:
            block.attn.c_proj.weight.normal_(0, 0.02)
            block.mlp.c_proj.weight.normal_(0, 0.02)
    return model


def measure_peak():
    return max(measure_matmul_flops(n, iters=5) for n in (1024, 2048, 1024, 2048))


def bench_train(model, batch_size, seq_len, steps, compile_too):
    "Median and best seconds per fwd+bwd step for each mode, steps interleaved; plus the first compiled step"
    vocab = model.config.vocab_size
    x = torch.randint(0, vocab, (batch_size, seq_len))
    y = torch.randint(0, vocab, (batch_size, seq_len))
    fns = {'eager': model}
    first = 0.0
    if compile_too:
        fns['compile'] = torch.compile(model, dynamic=False)
    def step(fn):
        loss = fn(x, y)
        loss.backward()
        model.zero_grad(set_to_none=True)
    for name, fn in fns.items():
        t0 = time.perf_counter()
        step(fn)  # warm-up (compiles when compiled)
        if name == 'compile': first = time.perf_counter() - t0
        step(fn)
    times = {name: [] for name in fns}
    for _ in range(steps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            step(fn)
            times[name].append(time.perf_counter() - t0)
    return {name: (statistics.median(ts), min(ts)) for name, ts in times.items()}, first


@torch.inference_mode()
def bench_decode(model, prompt_len=16, new_tokens=200):
    "Greedy single-token decode with a KV cache: median tokens/s over 4 runs"
    c = model.config
    rates = []
    for _ in range(4):
        cache = KVCache(1, c.n_kv_head, c.sequence_len, c.n_embd // c.n_head, c.n_layer)
        ids = torch.randint(0, c.vocab_size, (1, prompt_len))
        tok = model(ids, kv_cache=cache)[:, -1:].argmax(-1)
        t0 = time.perf_counter()
        for _ in range(new_tokens):
            tok = model(tok, kv_cache=cache)[:, -1:].argmax(-1)
        rates.append(new_tokens / (time.perf_counter() - t0))
    return statistics.median(rates)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--depths', default='4,6')
    p.add_argument('--seq-lens', default='256,512')
    p.add_argument('--tokens-per-step', type=int, default=2048)
    p.add_argument('--steps', type=int, default=6)
    p.add_argument('--no-compile', action='store_true')
    args = p.parse_args()
    depths = [int(d) for d in args.depths.split(',')]
    seq_lens = [int(t) for t in args.seq_lens.split(',')]

    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, {threads} threads, load average {os.getloadavg()[0]:.1f}")
    peak = measure_peak()
    print(f"measured fp32 matmul peak: {peak / 1e9:.0f} GFLOP/s (baseline for MFU)\n")
    print(f"{'depth':>5} {'T':>4} {'B':>2} {'mode':>8} {'params':>7} {'MFLOP/tok':>9} {'tok/s':>7} {'best':>7} "
          f"{'GFLOP/s':>7} {'MFU':>6} {'compile':>7}")
    rows = []
    for depth in depths:
        for T in seq_lens:
            B = max(1, args.tokens_per_step // T)
            model = make_model(depth, T)
            fpt = model.estimate_flops()
            res, first = bench_train(model, B, T, args.steps, not args.no_compile)
            for mode, (med, best) in res.items():
                rows.append((depth, T, B, mode, model.num_scaling_params(), fpt, B * T / med, B * T / best, first))
                print(f"{depth:>5} {T:>4} {B:>2} {mode:>8} {model.num_scaling_params() / 1e6:>6.1f}M {fpt / 1e6:>9.1f} "
                      f"{B * T / med:>7.0f} {B * T / best:>7.0f} {B * T * fpt / best / 1e9:>7.1f} "
                      f"{B * T * fpt / best / peak:>6.1%} {f'{first:.0f}s' if mode == 'compile' else '':>7}", flush=True)
    peak2 = measure_peak()
    print(f"\nmatmul peak re-measured after the models: {peak2 / 1e9:.0f} GFLOP/s "
          f"(GFLOP/s and MFU use the best step against the first peak)")
    model = make_model(4, 256)
    for n in sorted({1, threads}):
        torch.set_num_threads(n)
        print(f"decode, d4 T=256 batch 1, KV cache, eager, {n} thread{'s' if n > 1 else ''}: {bench_decode(model):.0f} tokens/s")
    torch.set_num_threads(threads)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == '__main__':
    main()
