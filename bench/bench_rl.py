"""Where an RL step's time goes on the CPU: sampling (Engine rollouts) against learning, and what batched,
KV-cached sampling saves over a naive per-sample generation loop.

    python bench/bench_rl.py                        # d4, 2 questions x 16 samples x 128 new tokens, 3 steps
    python bench/bench_rl.py --steps 5 --num-samples 8 --device-batch-size 8 --max-new-tokens 64
    python bench/bench_rl.py --threads 0            # torch's default thread count (default: 1 thread)
    python bench/bench_rl.py --compile              # chat_rl --compile: the RL steps (and the engine rows) compiled
    python bench/bench_rl.py --rollout-batch-questions 2 # the steps with 2 questions sampled together beside 1

Setup: a 4096-token BPE tokenizer trained on the offline corpus (`tiny_setup`), a d4 model (head_dim 64, context
256, window pattern L, random weights with non-zero projections, fp32) saved as an `sft` checkpoint in a temporary
base dir, and the SyntheticArithmetic task. The RL step is chat_rl's own code: `setup` then `rl_step` (rollouts
from `Engine` in batches of --device-batch-size, rewards, collation, forward/backward passes, optimizer step).
A random model rarely writes a stop token, so nearly every sample runs to --max-new-tokens.

Reported:
- per RL step: seconds sampling vs learning (and their shares), rollout tokens/s (generated tokens per second of
  sampling) and training tokens/s (tokens that carry a gradient, and all tokens forwarded, per second of learning);
  the steps alternate between sampling the questions one at a time (nanochat's loop) and --rollout-batch-questions
  of them together (`chat_rl --rollout-batch-questions`; default: all of a step's questions), so the two are
  compared in one run;
- rollouts for one question (--num-samples samples), the methods interleaved, best of --repeats, wall and CPU
  rates (tokens per CPU-second of all threads, from process_time):
    engine batched   `engine.generate_many([prompt], num_samples=device_batch_size)`, what chat_rl runs
    compiled batched the same through `Engine(compile=True)`, what `chat_rl --compile` runs (compiled before
                     timing; the compile time is printed)
    engine single    the same Engine, one sample at a time (KV cache, no batching)
    naive            `GPT.generate` per sample: no KV cache, no batching (one run: it is slow)
- the RL step as it would be with naive sampling (its sampling time rescaled by the measured rates; an estimate).
The machine may be shared: compare rows of one run, and read the CPU rates. One thread by default: on a small
shared machine a second OpenMP thread that waits for a busy core can slow sampling several-fold, run to run.
"""
import argparse
import os
import shutil
import tempfile
import time
from dataclasses import replace

import torch

import bench_gpt  # bench/ is on sys.path when a bench script runs
from nanochat.checkpoint_manager import save_checkpoint, get_checkpoints_dir, meta_model_config
from nanochat.common import autocast_ctx, parse_config
from nanochat.engine import Engine
from nanochat.testing import tiny_setup
from nanochat.scripts.chat_rl import RLConfig, setup, rl_step
from nanochat.tasks import SyntheticArithmetic


def timed(fn):
    "(result, wall seconds, CPU seconds)"
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def rollout_methods(run, prompt, args):
    "name -> (function returning the number of generated tokens, max repeats)"
    engine, model = run.engine, run.model
    compiled = Engine(model, run.tokenizer, compile=True)
    kw = dict(max_tokens=args.max_new_tokens, temperature=1.0, top_k=50)

    def batched(engine):
        n = 0
        for b in range(args.num_samples // args.device_batch_size):
            seqs = engine.generate_many([prompt], num_samples=args.device_batch_size, seed=b, **kw)[0]
            n += sum(len(s) - len(prompt) for s in seqs)
        return n

    t0 = time.perf_counter()
    compiled.generate_many([prompt], num_samples=args.device_batch_size, max_tokens=8)  # compiles the batch > 1 graph
    print(f"compiled the decode step in {time.perf_counter() - t0:.0f} s")

    def engine_single():
        n = 0
        for i in range(args.num_samples):
            seqs = engine.generate_many([prompt], num_samples=1, seed=i, **kw)[0]
            n += len(seqs[0]) - len(prompt)
        return n

    @torch.inference_mode()
    def naive():
        n = 0
        for i in range(args.num_samples):
            n += sum(1 for _ in model.generate(prompt, args.max_new_tokens, temperature=1.0, top_k=50, seed=i))
        return n

    return {"engine batched": (lambda: batched(engine), args.repeats),
            "compiled batched": (lambda: batched(compiled), args.repeats),
            "engine single": (engine_single, args.repeats), "naive": (naive, 1)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--depth', type=int, default=4)
    p.add_argument('--steps', type=int, default=3, help='RL steps to time (after one warm-up step)')
    p.add_argument('--examples-per-step', type=int, default=2)
    p.add_argument('--num-samples', type=int, default=16)
    p.add_argument('--device-batch-size', type=int, default=8)
    p.add_argument('--max-new-tokens', type=int, default=128)
    p.add_argument('--repeats', type=int, default=3)
    p.add_argument('--threads', type=int, default=1, help='torch intra-op threads (0 = torch default)')
    p.add_argument('--compile', action='store_true', help="the RL steps as chat_rl --compile runs them")
    p.add_argument('--rollout-batch-questions', type=int, default=0,
                   help="questions sampled together in the alternate steps (0: all of a step's questions)")
    args = p.parse_args()
    if args.threads: torch.set_num_threads(args.threads)
    base = tempfile.mkdtemp(prefix="bench_rl_")
    try: bench(args, base)
    finally: shutil.rmtree(base, ignore_errors=True)


def bench(args, base):
    "Everything, with the tokenizer, corpus and checkpoint in the temporary base dir `base`"
    tiny_setup(base, vocab_size=4096)  # sets NANOCHAT_BASE_DIR
    from nanochat.tokenizer import get_tokenizer
    vocab_size = get_tokenizer().get_vocab_size()
    model = bench_gpt.make_model(args.depth, 256, vocab_size=vocab_size, head_dim=64, window_pattern='L')
    tag = f"d{args.depth}"
    save_checkpoint(os.path.join(get_checkpoints_dir("sft"), tag), 0, model.state_dict(), None,
                    {"step": 0, "model_config": meta_model_config(model.config)})
    cfg = parse_config(RLConfig, [f"--model-tag={tag}", "--device-type=cpu", f"--num-iterations={args.steps + 1}",
                                  f"--examples-per-step={args.examples_per_step}", f"--num-samples={args.num_samples}",
                                  f"--device-batch-size={args.device_batch_size}",
                                  f"--max-new-tokens={args.max_new_tokens}",
                                  "--eval-every=-1", f"--compile={args.compile}"])
    run = setup(cfg, SyntheticArithmetic("train", size=1000), SyntheticArithmetic("test", size=100))
    c = run.model.config
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}; d{args.depth}: n_embd {c.n_embd}, {c.n_layer} layers, vocab {c.vocab_size}, "
          f"{sum(q.numel() for q in run.model.parameters()) / 1e6:.1f}M params")
    print(f"RL step: {args.examples_per_step} questions x {args.num_samples} samples (Engine batches of "
          f"{args.device_batch_size}{', compiled' if args.compile else ''}), up to {args.max_new_tokens} new tokens, "
          f"temperature 1.0, top-k 50\n")

    # 1) chat_rl's own step, the questions sampled one at a time and `together` at a time, alternately
    together = args.rollout_batch_questions or args.examples_per_step
    print(f"{'step':>4} {'questions':>9} {'sampling s':>10} {'learning s':>10} {'sampling %':>10} "
          f"{'rollout tok/s':>13} {'trained tok/s':>13} {'forwarded tok/s':>15}")
    steps = {1: [], together: []}
    for i in range(args.steps + 1):
        for q in steps:
            run.cfg = replace(run.cfg, rollout_batch_questions=q)
            out = rl_step(run)
            forwarded = out["seq_len"] * args.examples_per_step * args.num_samples  # every position is forwarded
            row = (out["sample_time"], out["learn_time"], out["sampled_tokens"], out["trained_tokens"], forwarded)
            if i > 0: steps[q].append(row)  # step 0 warms up
            total = out["sample_time"] + out["learn_time"]
            sample_time, learn_time = out["sample_time"], out["learn_time"]
            print(f"{i:>4} {q:>9} {sample_time:>10.2f} {learn_time:>10.2f} {100 * sample_time / total:>9.0f}% "
                  f"{out['sampled_tokens'] / sample_time:>13,.0f} {out['trained_tokens'] / learn_time:>13,.0f} "
                  f"{forwarded / learn_time:>15,.0f}" + ("  (warm-up)" if i == 0 else ""), flush=True)
        run.state.step += 1
    means = {}
    for q, rows in steps.items():
        s_time, l_time, s_tok, t_tok, f_tok = (sum(col) for col in zip(*rows))
        means[q] = s_time / len(rows)
        print(f"{q} question(s) at a time, mean of {len(rows)} steps: sampling {s_time / len(rows):.2f}s "
              f"({100 * s_time / (s_time + l_time):.0f}%), learning {l_time / len(rows):.2f}s; rollouts "
              f"{s_tok / s_time:,.0f} tok/s, training {t_tok / l_time:,.0f} trained tok/s ({f_tok / l_time:,.0f} "
              f"forwarded tok/s)")
    print(f"sampling {together} questions together: {means[1] / means[together]:.2f}x as fast as one at a time\n")
    s_time, l_time = (sum(col) for col in list(zip(*steps[1]))[:2])  # nanochat's loop, for the estimate below

    # 2) rollouts of one question, three ways, interleaved
    prompt = run.tokenizer.render_for_completion(run.train_task[0])
    run.model.eval()
    methods = rollout_methods(run, prompt, args)
    results = {name: [] for name in methods}
    for r in range(args.repeats):
        for name, (fn, max_repeats) in methods.items():
            if r >= max_repeats: continue
            with autocast_ctx("cpu"):
                n, wall, cpu = timed(fn)
            results[name].append((n / wall, n / max(cpu, 1e-9), n))
    best = {name: (max(w for w, _, _ in v), max(c for _, c, _ in v), v[0][2]) for name, v in results.items()}
    print(f"rollouts of one question: {args.num_samples} samples, {len(prompt)}-token prompt, up to "
          f"{args.max_new_tokens} new tokens (best of {args.repeats}; naive: 1 run)")
    print(f"{'method':>16} {'tokens':>7} {'tok/s wall':>11} {'tok/s CPU':>10} {'vs naive (CPU)':>15}")
    for name, (wall, cpu, n) in best.items():
        print(f"{name:>16} {n:>7,} {wall:>11,.0f} {cpu:>10,.0f} {cpu / best['naive'][1]:>14.1f}x")
    naive_sample = s_time * best["engine batched"][0] / best["naive"][0]  # the same tokens at the naive wall rate
    print(f"\nan RL step with naive sampling (estimate): sampling {naive_sample / len(steps[1]):.1f}s + learning "
          f"{l_time / len(steps[1]):.2f}s, sampling {100 * naive_sample / (naive_sample + l_time):.0f}% of the step "
          f"(measured with the Engine: {100 * s_time / (s_time + l_time):.0f}%)")
    print(f"load average at the end {os.getloadavg()[0]:.1f} (other processes distort wall-clock timings)")


if __name__ == '__main__':
    main()
