"""Inference speed on the CPU: the KV-cached Engine vs nanochat's decode loop vs naive generation.

    python bench/bench_engine.py                         # d4 and d6, 256 new tokens, batch 1 and 8
    python bench/bench_engine.py --depths 4 --repeats 5 --temperature 0
    python bench/bench_engine.py --threads 1             # every row on 1 thread (default auto, see below)
    python bench/bench_engine.py --cache-decay           # only: how fast data is read again, by time since the last read

On a CPU with AVX-512, bench_train.py's prefix (ATEN_CPU_CAPABILITY=avx2 ... TORCHINDUCTOR_CACHE_DIR=<own dir>) shows
what a CPU without it gets; the compiled rows refuse to run capped without a cache directory of their own.

Models: random init (output projections given noise), vocab 4096, head_dim 64, context 256, window pattern L, fp32.
A 16-token prompt, then 256 generated tokens (sampling with --temperature/--top-k, default 1.0/50 as in chat_rl).

Per depth it reports, with wall-clock and CPU rates (tokens per CPU-second of all threads, from process_time), best
of --repeats, the methods interleaved:
- decode tokens/s (all rows, after the first token) at batch 1 and 8 for
    engine     nanochat.engine.Engine.generate (eager; on the CPU its decode steps are LeanDecoder's, see 12_engine;
               at batch 1 on one thread, some products as column blocks summed by embedding_bag, elsewhere some as
               F.linear where a probe finds that faster, and above batch 1 some over an (in, out) copy where a
               probe finds that faster, compiled too: the run prints which)
    compiled   Engine(compile=True): the same lean step, compiled (torch.compile, the cache length and a batch above 1
               the only symbols: one graph for batch 1 and one for larger batches, compiled before timing for the
               row's thread count; the compile time is printed)
    reference  the baseline: nanochat's loop of mid-January 2026 (a91743c), rebuilt here on the same model:
               torch.multinomial sampling, get_pos() via .item(), a new input tensor every step, each row's first
               token sampled from the prefill's logits
    naive      no KV cache: GPT.generate at batch 1; at batch 8 a batched loop that reruns the whole sequence
    weights    no model at all: every matmul weight of the step (lm_head cut to the vocabulary) read once per step by
               a sum, on the row's threads. At batch 1 a decode step streams all of them for one token, so this is
               the memory floor of an fp32 step on this machine, measured in the same run: a step cannot be faster
               than reading its weights (unless they stay in the CPU's cache, where the floor is the cache's rate)
  and each method's speed-up over the reference (CPU rates): best against best, and the median (with the range) of
  the rounds' ratios, each round timing the methods one after the other; and its share of the weights row's rate;
- that the engine and the compiled engine give exactly the reference loop's tokens at temperature 0;
- prefill tokens/s (a 256-token prompt into a batch-1 cache) and time to first token (16- and 256-token prompts)
- KV cache bytes per token and row.
The machine is shared: compare methods from the same run, and read CPU time.

Threads (--threads auto, the default): batch 1 twice, on 1 thread and on all cores; larger batches on all cores.
Every method of a row runs on the row's thread count. A batch-1 matmul is a matrix-vector product that MKL runs
on one thread (nanochat's loop: a second OpenMP thread mostly waits at barriers). On more threads the engine's
eager step cuts each product into one block of the weight's rows per thread (`input_slices` in 12_engine), and
the compiled step computes them with a kernel inductor generates, which splits the weight's rows over the threads:
both stream the weights faster on all cores. On a 2-core machine shared with other processes two threads can be
several times slower than one (measured: d4 batch 1 at 11-87 tokens/s with 2 threads vs ~300-440 with 1, under load;
again with the products cut per thread, 4-6 ms a token against 1.7 on one thread, beside one busy process).
Inductor's kernels are specialised to the thread count they were compiled for, so each row compiles its own. At
batch 8 the matmuls are wide enough to share (d4: ~1,350 -> ~2,000 tokens/s).
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

from nanochat.engine import Engine, KVCache, RowState, _batch_copy_shapes, _column_blocks_shapes, _linear_rows_shapes
from nanochat.tokenizer import SPECIAL_TOKENS
import bench_gpt  # bench/ is on sys.path when a bench script runs
from bench_train import cpu_report, check_inductor_cache, nanochat_linear


class NoStopTokenizer:
    "Special-token ids outside the vocabulary: rows never end early, every run generates exactly max_tokens"
    def __init__(self, vocab_size): self.vocab_size = vocab_size
    def encode_special(self, s): return self.vocab_size + SPECIAL_TOKENS.index(s)
    def get_bos_token_id(self): return self.vocab_size
    def decode(self, ids): return ""
    def encode(self, text): return []


def make_model(depth, seq_len=256, window_pattern='L', **kwargs):
    "bench_gpt's random model with non-zero projections, full-context windows, in eval mode"
    return bench_gpt.make_model(depth, seq_len, window_pattern=window_pattern, **kwargs).eval()


# --- nanochat's decode loop (mid-January 2026), for the baseline -------------------------------------------------
class RefKVCache(KVCache):
    def get_pos(self): return self.cache_seqlens[0].item()  # nanochat reads the position from the tensor


def ref_sample(logits, rng, temperature=1.0, top_k=None):
    if temperature == 0.0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    if top_k is not None and top_k > 0:
        vals, idx = torch.topk(logits, min(top_k, logits.size(-1)), dim=-1)
        choice = torch.multinomial(F.softmax(vals / temperature, dim=-1), num_samples=1, generator=rng)
        return idx.gather(1, choice)
    return torch.multinomial(F.softmax(logits / temperature, dim=-1), num_samples=1, generator=rng)


@torch.inference_mode()
def reference_generate(engine, tokens, num_samples, max_tokens, temperature, top_k, seed=42):
    with nanochat_linear():
        yield from _reference_generate(engine, tokens, num_samples, max_tokens, temperature, top_k, seed)


def _reference_generate(engine, tokens, num_samples, max_tokens, temperature, top_k, seed=42):
    model, device = engine.model, engine.model.get_device()
    rng = torch.Generator(device=device); rng.manual_seed(seed)
    kv = engine.kv_cache_kwargs()
    kv_prefill = RefKVCache(1, seq_len=len(tokens), **kv)
    logits = model.forward(torch.tensor([tokens], dtype=torch.long, device=device), kv_cache=kv_prefill)[:, -1, :]
    sampled = ref_sample(logits.expand(num_samples, -1), rng, temperature, top_k)[:, 0].tolist()  # a token per row
    kv_cache = RefKVCache(num_samples, seq_len=len(tokens) + max_tokens, **kv)
    kv_cache.prefill(kv_prefill)
    rows = [RowState(tokens.copy()) for _ in range(num_samples)]
    for step in range(max_tokens):
        if step > 0:
            logits = model.forward(ids, kv_cache=kv_cache)[:, -1, :]
            sampled = ref_sample(logits, rng, temperature, top_k)[:, 0].tolist()
        column, masks = [], []
        for state, token in zip(rows, sampled):
            forced = len(state.forced_tokens) > 0
            token = state.forced_tokens.popleft() if forced else token
            column.append(token); masks.append(0 if forced else 1)
            engine.update_row(state, token)
        yield column, masks
        ids = torch.tensor(column, dtype=torch.long, device=device).unsqueeze(1)


def matmul_weights(model):
    "The weights a decode step multiplies by: every linear layer's, and lm_head's cut to the vocabulary"
    weights = [m.weight for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and name != 'lm_head']
    return weights + [model.lm_head.weight[:model.config.vocab_size]]


@torch.inference_mode()
def read_weights(weights, steps):
    "The memory floor of an fp32 decode step: each weight read once per step (a sum), nothing else computed"
    for _ in range(steps):
        for w in weights:
            w.sum()
        yield None, None


@torch.inference_mode()
def naive_batched(model, tokens, num_samples, max_tokens, temperature, top_k, seed=42):
    "No cache: every step reruns the whole (B, T) sequence"
    rng = torch.Generator().manual_seed(seed)
    ids = torch.tensor([tokens] * num_samples, dtype=torch.long)
    for _ in range(max_tokens):
        next_ids = ref_sample(model(ids)[:, -1, :], rng, temperature, top_k)
        ids = torch.cat([ids, next_ids], dim=1)
        yield next_ids[:, 0].tolist(), None


# --- timing --------------------------------------------------------------------------------------------------------
def time_stream(stream):
    "(steps, wall and CPU seconds to the first item, wall and CPU seconds for the rest)"
    t0, c0 = time.perf_counter(), time.process_time()
    first = None
    n = 0
    for _ in stream:
        n += 1
        if first is None:
            first = (time.perf_counter() - t0, time.process_time() - c0)
            t1, c1 = time.perf_counter(), time.process_time()
    return n, first, (time.perf_counter() - t1, time.process_time() - c1)


def best_decode(methods, batch, repeats):
    """Per method: best decode rates (tokens/s, all rows, after the first token) and TTFT, and each method's CPU rate
    in every round, in order (for the paired ratios); repeats are interleaved"""
    runs = {name: [] for name in methods}
    for r in range(repeats):  # engine, reference, ... then again: slow phases of a shared machine hit all methods
        for name, (make_stream, max_repeats) in methods.items():
            if r >= max_repeats: continue
            n, first, rest = time_stream(make_stream())
            runs[name].append(((n - 1) * batch / rest[0], (n - 1) * batch / max(rest[1], 1e-9), first[0]))
    best = {name: (max(w for w, _, _ in v), max(c for _, c, _ in v), min(t for _, _, t in v)) for name, v in runs.items()}
    return best, {name: [c for _, c, _ in v] for name, v in runs.items()}


def paired_ratios(rounds, name, base='reference'):
    "`name`'s CPU rate over `base`'s in each round, the two timed one after the other: (median, lowest, highest)"
    ratios = sorted(a / b for a, b in zip(rounds[name], rounds[base]))
    return statistics.median(ratios), ratios[0], ratios[-1]


@torch.inference_mode()
def prefill_rate(engine, prompt_len, repeats):
    model = engine.model
    ids = torch.randint(0, model.config.vocab_size, (1, prompt_len))
    walls, cpus = [], []
    for _ in range(repeats):
        cache = KVCache(1, seq_len=prompt_len, **engine.kv_cache_kwargs())
        t0, c0 = time.perf_counter(), time.process_time()
        model.forward(ids, kv_cache=cache)
        walls.append(prompt_len / (time.perf_counter() - t0)); cpus.append(prompt_len / max(time.process_time() - c0, 1e-9))
    return max(walls), max(cpus)


def busy_wait(seconds):
    "Keep the core busy in Python for `seconds` (as a step's small operators keep it), touching almost no memory"
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pass


def median_seconds(fn, before, reps=30):
    "Median wall seconds of fn() over reps calls, each right after before()"
    times = []
    for _ in range(reps):
        before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@torch.inference_mode()
def cache_decay_table(gaps_ms=(0, 2, 10, 50), sizes_mb=(2, 8, 47)):
    """How fast data read again is read, by how long ago it was last read: a sum over an array right after the last
    sum over it, and after a gap spent busy in Python (which reads almost nothing); then d6's batch-8 products (its
    matmul weights, 8 rows each, all threads) as a pass back to back, and with a gap before each pass, which is what a
    decode step's other work puts between one step's read of a weight and the next's. As markdown"""
    def cells(read, mb):
        "The median time of read() and its rate over mb MB, after each gap"
        seconds = [median_seconds(read, lambda: busy_wait(g / 1000)) for g in gaps_ms]
        return " | ".join(f"{1000 * s:.2f} ms ({mb / 1024 / s:.0f} GB/s)" for s in seconds)
    lines = ["| array | " + " | ".join(f"{g} ms since the last read" for g in gaps_ms) + " |",
             "|---" * (len(gaps_ms) + 1) + "|"]
    for mb in sizes_mb:
        a = torch.randn(mb * 2**20 // 4)
        lines.append(f"| sum over {mb} MB | {cells(a.sum, mb)} |")
    weights = [w.detach().t().contiguous() for w in matmul_weights(make_model(6))]  # (in, out): x @ w
    xs = {w.size(0): torch.randn(8, w.size(0)) for w in weights}
    mb = sum(w.numel() for w in weights) * 4 / 2**20
    def products():
        for w in weights:
            xs[w.size(0)] @ w
    lines.append(f"| d6's {len(weights)} products at batch 8 ({mb:.0f} MB of weights) | {cells(products, mb)} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--depths', default='4,6')
    p.add_argument('--batches', default='1,8')
    p.add_argument('--new-tokens', type=int, default=256)
    p.add_argument('--prompt-len', type=int, default=16)
    p.add_argument('--temperature', type=float, default=1.0)
    p.add_argument('--top-k', type=int, default=50)
    p.add_argument('--repeats', type=int, default=5)
    p.add_argument('--threads', default='auto',
                   help="'auto' (batch 1 on 1 thread and on all cores, larger batches on all cores) or a number")
    p.add_argument('--no-naive', action='store_true', help='skip the (slow) no-cache baselines')
    p.add_argument('--cache-decay', action='store_true',
                   help="only how fast data is read again by how long ago it was last read (sums, d6's batch-8 products)")
    args = p.parse_args()
    if args.cache_decay:
        torch.set_num_threads(os.cpu_count() if args.threads == 'auto' else int(args.threads))
        print(cpu_report())
        print(f"{torch.get_num_threads()} thread(s), load average {os.getloadavg()[0]:.1f}; medians of 30 reads\n")
        print(cache_decay_table())
        return
    def threads_for(batch): return (1 if batch == 1 else os.cpu_count()) if args.threads == 'auto' else int(args.threads)
    rows_to_run = []  # (batch, threads)
    for batch in [int(b) for b in args.batches.split(',')]:
        rows_to_run.append((batch, threads_for(batch)))
        if args.threads == 'auto' and batch == 1 and os.cpu_count() > 1:
            rows_to_run.append((batch, os.cpu_count()))  # the compiled step's products share out over threads
    from nanochat.common import get_peak_flops
    check_inductor_cache()  # the compiled rows
    print(cpu_report())
    print(f"fp32 matmul peak measured now: {get_peak_flops('cpu') / 1e9:.0f} GFLOP/s")
    print(f"torch {torch.__version__}, threads {args.threads}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; temperature {args.temperature}, top_k {args.top_k}, "
          f"{args.prompt_len}-token prompt + {args.new_tokens} tokens, best of {args.repeats}")
    top_k = args.top_k or None
    gen_kw = dict(max_tokens=args.new_tokens, temperature=args.temperature, top_k=top_k)
    results = {}
    for depth in [int(d) for d in args.depths.split(',')]:
        model = make_model(depth)
        c = model.config
        engine = Engine(model, NoStopTokenizer(c.vocab_size))
        compiled = Engine(model, NoStopTokenizer(c.vocab_size), compile=True)
        prompt = torch.randint(0, c.vocab_size, (args.prompt_len,), generator=torch.Generator().manual_seed(1)).tolist()
        weights = matmul_weights(model)
        weight_bytes = sum(w.numel() * w.element_size() for w in weights)
        kv_bytes = 2 * c.n_layer * c.n_kv_head * (c.n_embd // c.n_head) * torch.tensor([], dtype=engine.kv_cache_kwargs()['dtype']).element_size()
        print(f"\nd{depth}: n_embd {c.n_embd}, {c.n_layer} layers, {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params, "
              f"KV cache {kv_bytes:,} bytes per token per row ({kv_bytes * (args.prompt_len + args.new_tokens) / 2**20:.1f} MiB per row here), "
              f"matmul weights {weight_bytes / 2**20:.1f} MiB (read once per decode step)")
        torch.set_num_threads(threads_for(1))
        for _ in engine.generate(prompt, max_tokens=8): pass  # warm up (and, on one thread, the column blocks' probe)
        if threads_for(1) == 1:
            print("batch 1 on one thread, each product as column blocks (embedding_bag) or as MKL's: "
                  + ", ".join(f"{o}x{i} {'blocks' if v else 'MKL'}" for (o, i), v in _column_blocks_shapes.items()
                              if c.n_embd in (o, i)) + " (12_engine's probe)")
        print(f"{'batch':>5} {'threads':>7} {'method':>10} {'tok/s wall':>11} {'tok/s CPU':>10} {'TTFT ms':>8} {'vs reference (CPU)':>19} "
              f"{'of weights read (CPU)':>22}")
        for batch, threads in rows_to_run:
            torch.set_num_threads(threads)
            torch._dynamo.reset()  # inductor's kernels are built for one thread count: compile for this row's
            t0 = time.perf_counter()
            for _ in compiled.generate(prompt, num_samples=batch, **gen_kw): pass  # compiles this batch size once
            compile_s = time.perf_counter() - t0
            greedy = dict(gen_kw, temperature=0.0)
            ref = [c for c, _ in reference_generate(engine, prompt, batch, args.new_tokens, 0.0, None)]
            same = {name: [c for c, _ in e.generate(prompt, num_samples=batch, **greedy)] == ref
                    for name, e in (('engine', engine), ('compiled', compiled))}
            # which of the engine's products the probe left as F.linear at this batch kind and thread count
            asked = {(o, i): v for (o, i, b, t), v in _linear_rows_shapes.items()
                     if b == (1 if batch == 1 else 8) and t == threads and c.n_embd in (o, i)}
            rows_said = ("; eager products as F.linear (12_engine's probe): "
                         + (", ".join(f"{o}x{i}" for (o, i), v in asked.items() if v) or "none")) if asked else ""
            copies = {(o, i): v for (o, i, t), v in _batch_copy_shapes.items() if t == threads and c.n_embd in (o, i)}
            if batch > 1 and copies:  # asked above batch 1, by the eager and the compiled step alike
                rows_said += ("; products over an (in, out) copy (12_engine's probe): "
                              + (", ".join(f"{o}x{i}" for (o, i), v in copies.items() if v) or "none"))
            print(f"batch {batch}, {threads} thread(s): compiled the decode step in {compile_s:.0f} s; temperature 0: "
                  + ", ".join(f"{name} tokens {'identical to' if ok else 'DIFFER from'} the reference loop's"
                              for name, ok in same.items()) + rows_said)
            methods = {
                'engine': (lambda: engine.generate(prompt, num_samples=batch, **gen_kw), args.repeats),
                'compiled': (lambda: compiled.generate(prompt, num_samples=batch, **gen_kw), args.repeats),
                'reference': (lambda: reference_generate(engine, prompt, batch, args.new_tokens, args.temperature, top_k), args.repeats),
                'weights': (lambda: read_weights(weights, args.new_tokens), args.repeats),
            }
            if not args.no_naive:  # slow (quadratic): one run
                methods['naive'] = ((lambda: model.generate(prompt, args.new_tokens, args.temperature, top_k)) if batch == 1
                                    else (lambda: naive_batched(model, prompt, batch, args.new_tokens, args.temperature, top_k)), 1)
            rows, rounds = best_decode(methods, batch, args.repeats)
            for name, (wall, cpu, ttft) in rows.items():
                speedup = '' if name in ('reference', 'weights') else f"{cpu / rows['reference'][1]:.2f}x"
                floor = '' if name == 'weights' else f"{100 * cpu / rows['weights'][1]:.0f}%"
                print(f"{batch:>5} {torch.get_num_threads():>7} {name:>10} {wall:>11,.0f} {cpu:>10,.0f} {ttft * 1e3:>8.1f} "
                      f"{speedup:>19} {floor:>22}", flush=True)
            results[(depth, batch, threads)] = rows, rounds
        for plen in (args.prompt_len, 256):
            torch.set_num_threads(threads_for(plen))  # a prompt is a batch of tokens for the matmuls
            wall, cpu = prefill_rate(engine, plen, args.repeats)
            ttft = min(time_stream(engine.generate(list(range(plen)), max_tokens=1))[1][0] for _ in range(args.repeats))
            print(f"prefill {plen:>3} tokens ({torch.get_num_threads()} thread(s)): {wall:>8,.0f} tok/s wall, {cpu:>8,.0f} tok/s CPU; "
                  f"time to first token {ttft * 1e3:.1f} ms")
    print("\n| depth | batch | threads | nanochat loop tok/s | engine tok/s | compiled tok/s | engine / loop | compiled / loop | engine / loop, paired | compiled / loop, paired | compiled / loop (wall) | weights read tok/s | loop, engine, compiled: of weights read |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (depth, batch, threads), (rows, rounds) in results.items():
        r, e, c, w = rows['reference'][1], rows['engine'][1], rows['compiled'][1], rows['weights'][1]
        paired = ["{:.2f}x ({:.2f}-{:.2f})".format(*paired_ratios(rounds, name)) for name in ('engine', 'compiled')]
        print(f"| d{depth} | {batch} | {threads} | {r:,.0f} | {e:,.0f} | {c:,.0f} | {e / r:.2f}x | {c / r:.2f}x | {paired[0]} "
              f"| {paired[1]} | {rows['compiled'][0] / rows['reference'][0]:.2f}x | {w:,.0f} "
              f"| {100 * r / w:.0f}%, {100 * e / w:.0f}%, {100 * c / w:.0f}% |")
    print("(CPU-time rates, tokens per CPU-second of all threads, except the compiled / loop (wall) column: the same methods on "
          "the same threads; 'weights read': each step's matmul weights summed once, no model, the memory floor of a step. "
          "'/ loop': best against best; 'paired': the median (lowest-highest) of the rounds' ratios, each method timed "
          "right after the other in a round, which a machine whose speed drifts within the run moves less)")
    print(f"load average at the end {os.getloadavg()[0]:.1f} (other processes on this machine distort wall-clock timings)")


if __name__ == '__main__':
    main()
