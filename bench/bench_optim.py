"""Optimizer step time on CPU, as a share of a full training step.

For a depth-4 and a depth-6 GPT (the CPU runs' shapes: head_dim 64, seq 256, 8 sequences per step, vocab 4096)
it measures, in one process and on the same gradients:
  - the baseline: forward + backward of one micro-batch,
  - AdamW (embeddings, lm_head, scalars): torch's fused kernel vs the unfused foreach path,
  - Muon (every matrix in the blocks): Polar Express vs Newton-Schulz, eager vs torch.compile (and, with --bf16,
    nanochat's bf16 orthogonalization on a CPU, to show why the orthogonalization dtype follows the device).
Each optimizer row reports ms per step, ms per million parameters, and its share of a full training step
(forward + backward + AdamW fused + that Muon variant).

    python bench/bench_optim.py                      # d4 and d6, eager and compiled (compiling takes a minute)
    python bench/bench_optim.py --no-compile --bf16  # add the bf16 row, skip torch.compile
"""
import argparse, os, time
import torch
import torch._dynamo
from nanochat.gpt import GPT, GPTConfig
from nanochat.optim import Muon, AdamW, setup_optimizers
from nanochat.common import get_orth_dtype, cpu_bf16_matmul_is_fast

def build(depth, args):
    "A GPT of `depth` with the CPU run's shapes, initialized as nanochat does (meta -> cpu -> init_weights)"
    config = GPTConfig.from_depth(depth, args.vocab_size, args.max_seq_len, head_dim=args.head_dim, window_pattern='L')
    with torch.device('meta'): model = GPT(config)
    model.to_empty(device='cpu')
    torch.manual_seed(0)
    model.init_weights()
    return model

def timeit(fn, steps, warmup):
    "Mean seconds per call of `fn` after `warmup` untimed calls; also returns the first call's time"
    t0 = time.perf_counter(); fn(); first = time.perf_counter() - t0
    for _ in range(warmup - 1): fn()
    t0 = time.perf_counter()
    for _ in range(steps): fn()
    return (time.perf_counter() - t0) / steps, first

# the orthogonalization dtype Muon picks here: fp32, or bf16 where the probe finds fast bf16 units
ORTH = str(get_orth_dtype('cpu')).removeprefix('torch.')
ADAMW_DEFAULT, MUON_DEFAULT = 'AdamW fused (default)', f'Muon polar_express eager {ORTH}'

def bench_depth(depth, args):
    model = build(depth, args)
    adamw_opt, muon_opt = setup_optimizers(model)
    adam_params = [p for g in adamw_opt.param_groups for p in g['params']]
    matrix_params = [p for g in muon_opt.param_groups for p in g['params']]
    n_adam, n_muon = sum(p.numel() for p in adam_params), sum(p.numel() for p in matrix_params)
    x = torch.randint(0, args.vocab_size, (args.device_batch_size, args.max_seq_len))
    y = torch.roll(x, -1, dims=1)

    def fwd_bwd():
        model.zero_grad(set_to_none=True)
        model(x, y).backward()
    t_fb, _ = timeit(fwd_bwd, args.steps, args.warmup)  # leaves a fresh set of gradients in place
    rows = [('forward + backward (baseline)', None, t_fb, None)]

    snapshot = [p.detach().clone() for p in model.parameters()]
    def restore():
        with torch.no_grad():
            for p, s in zip(model.parameters(), snapshot): p.copy_(s)

    adam_groups = lambda: [dict(params=g['params'], lr=g['lr']) for g in adamw_opt.param_groups]
    variants = [(ADAMW_DEFAULT, n_adam, lambda: AdamW(adam_groups(), fused=True)),
                ('AdamW unfused (foreach)', n_adam, lambda: torch.optim.AdamW(
                    adam_groups(), betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0, foreach=True))]
    for compile in ([False, True] if args.compile else [False]):
        for ortho in ('polar_express', 'newtonschulz5'):
            name = f"Muon {ortho} {'compiled' if compile else 'eager'} {ORTH}"
            variants.append((name, n_muon, lambda o=ortho, c=compile: Muon(matrix_params, ortho=o, compile=c, weight_decay=0.2)))
    if args.bf16:
        variants.append(('Muon polar_express eager bf16', n_muon,
                         lambda: Muon(matrix_params, orth_dtype=torch.bfloat16, compile=False, weight_decay=0.2)))

    for name, n, make in variants:
        torch._dynamo.reset()
        restore()
        opt = make()
        slow = 'bf16' in name and not cpu_bf16_matmul_is_fast()  # bf16 without bf16 units: minutes a step
        steps, warmup = (1, 1) if slow else (args.steps, args.warmup)
        t, first = timeit(opt.step, steps, warmup)
        rows.append((name + (' (1 timed step)' if slow else ''), n, t, first))
        restore()
    return model, rows, n_adam, n_muon

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--depths', default='4,6', help="comma-separated model depths")
    p.add_argument('--vocab-size', type=int, default=4096)
    p.add_argument('--head-dim', type=int, default=64)
    p.add_argument('--max-seq-len', type=int, default=256)
    p.add_argument('--device-batch-size', type=int, default=8)
    p.add_argument('--steps', type=int, default=5, help="timed steps per row")
    p.add_argument('--warmup', type=int, default=2, help="untimed steps per row, at least 1 (the first one compiles "
                                                          "and is reported on its own)")
    p.add_argument('--no-compile', dest='compile', action='store_false', help="skip the torch.compile rows")
    p.add_argument('--bf16', action='store_true', help="add a Muon row with bf16 orthogonalization (slow on CPU)")
    p.add_argument('--threads', type=int, default=0, help="torch threads (0 = torch's default)")
    args = p.parse_args()
    if args.threads: torch.set_num_threads(args.threads)
    torch._dynamo.config.recompile_limit = 64  # one graph per (shape, method): more than the default 8 here
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}; "
          f"batch {args.device_batch_size} x {args.max_seq_len} tokens, vocab {args.vocab_size}, head_dim {args.head_dim}")
    for depth in [int(d) for d in args.depths.split(',')]:
        model, rows, n_adam, n_muon = bench_depth(depth, args)
        times = {name: t for name, _, t, _ in rows}
        t_fb = rows[0][2]
        print(f"\nd{depth}: n_embd {model.config.n_embd}, AdamW params {n_adam / 1e6:.2f}M, Muon params {n_muon / 1e6:.2f}M")
        print(f"{'':32s} {'ms/step':>9s} {'ms/Mparam':>10s} {'share of step':>14s} {'first call':>11s}")
        for name, n, t, first in rows:
            if n is None:
                print(f"{name:32s} {t * 1e3:9.1f}")
                continue
            # full step = forward + backward + an AdamW step + a Muon step, the other optimizer at its CPU default
            other = times[MUON_DEFAULT] if name.startswith('AdamW') else times[ADAMW_DEFAULT]
            full = t_fb + t + other
            print(f"{name:32s} {t * 1e3:9.1f} {t * 1e3 / (n / 1e6):10.2f} {100 * t / full:13.1f}% {first:10.2f}s")

if __name__ == '__main__':
    main()
