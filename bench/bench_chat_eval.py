"""chat_eval throughput on the CPU: problems/s of categorical and generative evaluation, against nanochat's loop shape.

    python bench/bench_chat_eval.py                       # d4, 64 categorical and 8 generative problems
    python bench/bench_chat_eval.py --repeats 5 --max-new-tokens 128
    python bench/bench_chat_eval.py --source sft          # a real checkpoint from <base> instead of a random d4
    python bench/bench_chat_eval.py --source rl --compile --temperature 0 --generative-problems 100 --max-new-tokens 192

Model: by default a random d4 (bench_gpt.make_model: vocab = the tokenizer's, head_dim 64, context 256, window L,
fp32) with a 2048-token BPE trained on the standard library's documentation; with --source, that checkpoint and
its tokenizer. Problems: 4-choice arithmetic questions rendered with render_mc (categorical) and SyntheticArithmetic
test problems (generative). A random model never ends its reply, so every sample runs to --max-new-tokens in both
methods. With --source the replies end, and the methods draw differently (the Engine inverts the CDF and runs the
calculator, GPT.generate calls torch.multinomial): compare them at --temperature 0.

Rows, best of --repeats (methods interleaved, so a busy machine slows all of them alike):
- categorical  batched      run_categorical_eval, --batch-size prompts per forward (right-padded with BOS): nanochat's
                            shape too (its -b defaults to 8)
               per-problem  the same function at batch 1: one unbatched forward per problem (the reference row)
- generative   engine       run_generative_eval: the Engine (KV cache, one prefill shared by the samples): nanochat's
                            shape, one problem at a time
               together     one sample each, --batch-size problems decoded together (Engine.generate_many)
               naive        per problem and per sample, GPT.generate: batch 1, no KV cache, the whole sequence rerun
                            for every new token
at --num-samples 1 and 4. The speedup column is against the baseline of the same group, measured in this run; the
"together" row also gives its ratio to the engine's one-problem-at-a-time row, and whether the two solved as many
problems (at --temperature 0 they decode the same tokens up to rounding). --compile: the engine's compiled step
for both engine rows (compiled before the timing); the main job's evaluations batch eagerly, and only RL compiles.
"""
import argparse
import contextlib
import io
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpt  # noqa: E402  (bench/ is on sys.path when a bench script runs)
from nanochat.engine import Engine  # noqa: E402
from nanochat.scripts.chat_eval import run_categorical_eval, run_generative_eval  # noqa: E402
from nanochat.tasks import Task, SyntheticArithmetic, arithmetic_problem, render_mc  # noqa: E402


class ArithmeticMC(Task):
    "4-choice arithmetic questions: the right answer and three near misses"
    def __init__(self, size, **kwargs):
        super().__init__(**kwargs)
        self.size = size

    @property
    def eval_type(self): return 'categorical'
    def num_examples(self): return self.size

    def get_example(self, index):
        rng = random.Random(index)
        question, _, answer = arithmetic_problem(rng)
        choices = [answer + d for d in rng.sample([-3, -2, -1, 1, 2, 3], 3)] + [answer]
        rng.shuffle(choices)
        letter = "ABCD"[choices.index(answer)]
        return {"messages": [{"role": "user", "content": render_mc(question, "ABCD", [str(c) for c in choices])},
                             {"role": "assistant", "content": letter}], "letters": list("ABCD")}

    def evaluate(self, conversation, completion): return int(completion == conversation["messages"][-1]["content"])


class NaiveGenerate:
    "Stands in for the Engine in run_generative_eval: GPT.generate per sample (batch 1, no KV cache)"
    def __init__(self, model, tokenizer):
        self.model = model
        self.stop = {tokenizer.encode_special("<|assistant_end|>"), tokenizer.get_bos_token_id()}

    def generate_batch(self, tokens, num_samples=1, max_tokens=None, temperature=1.0, top_k=None, seed=42):
        results = []
        for sample in range(num_samples):
            out = list(tokens)
            stream = self.model.generate(tokens, max_tokens, temperature=temperature, top_k=top_k, seed=seed + sample)
            for token in stream:
                if token in self.stop: break
                out.append(token)
            results.append(out)
        return results, None


def random_d4(tokenizer, seq_len):
    "bench_gpt's random d4 with the tokenizer's vocabulary, full-context windows, eval mode"
    return bench_gpt.make_model(4, seq_len, vocab_size=tokenizer.get_vocab_size(), window_pattern='L').eval()


def bpe_tokenizer(vocab_size=2048):
    from nanochat.dataset import collect_local_documents
    from nanochat.tokenizer import RustBPETokenizer
    return RustBPETokenizer.train_from_iterator(iter(collect_local_documents(max_chars=1_000_000)), vocab_size)


def timed(fn):
    "(seconds, result) of one quiet call"
    with contextlib.redirect_stdout(io.StringIO()):
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out


def best_rates(methods, num_problems, repeats):
    "Best problems/s per method over interleaved repeats; also each method's (passed, total)"
    seconds, outcomes = {name: [] for name in methods}, {}
    for _ in range(repeats):
        for name, fn in methods.items():
            dt, (_, passed, total) = timed(fn)
            seconds[name].append(dt)
            outcomes[name] = (passed, total)
    return {name: num_problems / min(v) for name, v in seconds.items()}, outcomes


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--source', default=None, help='evaluate this checkpoint (base|mid|sft|rl) instead of a random d4')
    p.add_argument('--categorical-problems', type=int, default=64)
    p.add_argument('--generative-problems', type=int, default=8)
    p.add_argument('--batch-size', type=int, default=8, help='prompts per forward pass, categorical')
    p.add_argument('--max-new-tokens', type=int, default=64)
    p.add_argument('--repeats', type=int, default=3)
    p.add_argument('--threads', type=int, default=1, help='torch intra-op threads (1 is fastest for these sizes)')
    p.add_argument('--temperature', type=float, default=1.0, help='generative sampling temperature (0: greedy)')
    p.add_argument('--compile', action='store_true', help="the engine rows decode through the compiled step")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.source:
        from nanochat.checkpoint_manager import load_model
        model, tokenizer, meta = load_model(args.source, 'cpu', phase='eval')
        what = f"{args.source} checkpoint (step {meta.get('step')}, depth {model.config.n_layer})"
    else:
        tokenizer = bpe_tokenizer()
        model = random_d4(tokenizer, 256)
        what = f"random d4, vocab {tokenizer.get_vocab_size()}"
    print(f"{what}, {torch.get_num_threads()} thread(s), load average {os.getloadavg()[0]:.2f}")
    rows, notes = [], []

    mc = ArithmeticMC(args.categorical_problems)
    prompt_lens = [len(tokenizer.render_for_completion(mc[i])) for i in range(len(mc))]
    print(f"categorical: {len(mc)} problems, prompts of {min(prompt_lens)}-{max(prompt_lens)} tokens")
    rates, outcomes = best_rates({
        'batched': lambda: run_categorical_eval(mc, tokenizer, model, args.batch_size),
        'per-problem': lambda: run_categorical_eval(mc, tokenizer, model, 1),
    }, len(mc), args.repeats)
    assert outcomes['batched'] == outcomes['per-problem'], outcomes  # the same answers either way
    rows += [('categorical', f'batched (b={args.batch_size})', rates['batched'], rates['per-problem']),
             ('categorical', 'per-problem (baseline)', rates['per-problem'], rates['per-problem'])]

    task = SyntheticArithmetic('test', size=args.generative_problems)
    engine, naive = Engine(model, tokenizer, compile=args.compile), NaiveGenerate(model, tokenizer)
    def run(e, n, batch_size=1):
        return run_generative_eval(task, tokenizer, model, e, n, args.max_new_tokens, args.temperature, 50,
                                   batch_size=batch_size)
    if args.compile:  # compile every graph the rows use (batch 1, padded rows, samples of one prompt) before timing
        for n, batch_size in ((1, 1), (1, args.batch_size), (4, 1)):
            timed(lambda: run(engine, n, batch_size))
    for n in (1, 4):
        methods = {'engine': lambda n=n: run(engine, n), 'naive': lambda n=n: run(naive, n)}
        if n == 1:
            methods['together'] = lambda: run(engine, 1, args.batch_size)
        rates, outcomes = best_rates(methods, len(task), args.repeats)
        rows.append(('generative', f'engine, {n} sample(s)', rates['engine'], rates['naive']))
        if n == 1:
            same = "the same number solved" if outcomes['together'] == outcomes['engine'] else \
                f"solved {outcomes['together'][0]} vs {outcomes['engine'][0]}"
            rows.append(('generative', f'together (b={args.batch_size}), 1 sample', rates['together'], rates['naive']))
            notes.append(f"together / engine at 1 sample: {rates['together'] / rates['engine']:.2f}x ({same})")
        rows.append(('generative', f'naive, {n} sample(s) (baseline)', rates['naive'], rates['naive']))

    print(f"\n{'eval':<12} {'method':<32} {'problems/s':>11} {'speedup':>8}")
    for kind, method, rate, baseline in rows:
        print(f"{kind:<12} {method:<32} {rate:>11.2f} {rate / baseline:>7.2f}x")
    print(f"(generative: at most {args.max_new_tokens} new tokens per sample, temperature {args.temperature}, "
          f"{'compiled' if args.compile else 'eager'} engine; categorical: one forward per batch)")
    for note in notes:
        print(note)


if __name__ == '__main__':
    main()
