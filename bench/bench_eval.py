"""Evaluation throughput on the CPU: val bpb tokens/s and CORE problems/s, this project next to nanochat's loop shapes.

    python bench/bench_eval.py                    # d4 and d6, seq 256, batch 8: bpb on 16 batches, CORE 40 items/task
    python bench/bench_eval.py --quick            # d4 only, 4 bpb batches, 12 CORE items per task, 2 repeats
    python bench/bench_eval.py --bundle local     # CORE on the offline bundle even when the real one is present
    python bench/bench_eval.py --corpus DIR       # any directory of FineWeb-format shards

Both sides run the project's own loops in one process; the baseline swaps in nanochat's (a91743c) code with
bench_train's `Side`: GPT.forward (the logits materialised in fp32, `15 * tanh(logits / 15)`, `F.cross_entropy`),
MLP.forward (`F.relu(x).square()`), the norm, the rotary embedding, Linear.forward (the BLAS only, no oneDNN probe),
SDPA's attention, and Muon's iteration (unused here). The loops themselves are the same as nanochat's on both sides:
- bpb rows: `nanochat.loss_eval.evaluate_bpb` under `torch.no_grad()` and autocast_ctx, as base_train's val pass,
  over --bpb-steps batches of --batch-size x --seq-len val tokens (packed by the best-fit loader once, before timing:
  the tokenizer is not timed). The project's forward fuses the softcap and the loss (`softcap_cross_entropy`) and
  computes them a chunk of rows at a time, so the logits never exist whole (d4 at 1 thread: 1.06-1.17x before the
  chunks, 1.22-1.39x with them, on a 2-core Zen 3).
  MFU = forward FLOPs per token (GPT.estimate_flops / 3: estimate_flops counts forward + backward as
  6 x matmul params + 12 h q T per layer, so a forward is 2 x params + 4 h q T, attention counted unmasked, the
  way nanochat counts it) x tokens/s over the fp32 matmul peak measured in this run. Both sides' bpb must agree.
- CORE rows: `nanochat.core_eval.evaluate_task`: one forward per item, all of its choices batched (padded with BOS),
  per task type (multiple choice, schema, language modeling). The task comes from the real CORE bundle
  (`real_data_dir('core_eval_bundle')`: the first task of each type in core.yaml) when present, else from a bundle
  built offline from the val shard (`build_local_eval_bundle`). Prompts are cropped to the model's context. CORE's
  forward returns logits (no targets), so the two sides differ by the forward's pieces only (MLP, norm, rotary,
  the products' library, attention): expect a ratio near 1.00x.
Model: a random d4/d6 (bench_gpt.make_model: head_dim 64, window L, fp32) with a vocab-4096 BPE trained on the corpus
(bench_train's, cached in <tmp>/nanochat_bench_eval), on one thread by default (--threads; on a shared machine a
busy neighbour stalls 2-thread OpenMP kernels, over 10x at these sizes; the peak is measured at the same count).
Each row is the best of --repeats timed passes (the two sides take turns, who goes first alternates, after one
untimed warm-up pass each): a busy machine only ever slows a pass. Passes of a fraction of a second are noisy: on a
busy machine, best of 2 moved a row by up to 25% (an A/A run of one side against itself moves 2-4% at best of 4).
Not a test: it prints tables. Read ratios from one run, on a quiet machine.
"""
import argparse
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpt  # noqa: E402  (bench/ is on sys.path when a bench script runs)
import bench_train  # noqa: E402
from nanochat.common import autocast_ctx, get_mfu  # noqa: E402
from nanochat.core_eval import (build_local_eval_bundle, core_task_meta, evaluate_task, load_core_config,  # noqa: E402
                                load_task_data)
from nanochat.loss_eval import evaluate_bpb  # noqa: E402
from nanochat.testing import real_data_dir  # noqa: E402

SIDES = ("nanochat", "project")
TASK_TYPES = ("multiple_choice", "schema", "language_modeling")


def interleaved_best(side, fn, repeats):
    "Best seconds per side over `repeats` alternating passes of `fn()` (after one warm-up each); each side's result"
    seconds, results = {name: [] for name in SIDES}, {}
    for name in SIDES:
        side.use(name, reset=False)
        fn()  # warm-up: the allocator and page faults of the first pass
    for r in range(repeats):
        for name in (SIDES if r % 2 == 0 else SIDES[::-1]):
            side.use(name, reset=False)
            t0 = time.perf_counter()
            results[name] = fn()
            seconds[name].append(time.perf_counter() - t0)
    side.use("project", reset=False)
    return {name: min(v) for name, v in seconds.items()}, results


def val_batches(tokenizer, batch_size, seq_len, steps):
    "`steps` (inputs, targets) val batches from base_train's best-fit loader, copied out of its reused buffers"
    from nanochat.dataloader import tokenizing_distributed_data_loader_bos_bestfit
    loader = tokenizing_distributed_data_loader_bos_bestfit(tokenizer, batch_size, seq_len, "val", device="cpu")
    return [(x.clone(), y.clone()) for _, (x, y) in zip(range(steps), loader)]


def bench_bpb(side, model, batches, token_bytes, repeats, peak):
    "tokens/s, MFU and bpb of evaluate_bpb on both sides"
    def run():
        with autocast_ctx("cpu"):
            return evaluate_bpb(model, batches, len(batches), token_bytes)
    seconds, bpbs = interleaved_best(side, run, repeats)
    num_tokens = sum(x.numel() for x, _ in batches)
    fwd_flops = model.estimate_forward_flops()
    out = {}
    for name in SIDES:
        tok_s = num_tokens / seconds[name]
        out[name] = dict(tok_s=tok_s, mfu=get_mfu(fwd_flops, tok_s, peak), bpb=bpbs[name])
    n, p = bpbs["nanochat"], bpbs["project"]
    assert abs(p - n) <= 1e-4 * abs(n), f"bpb differs: nanochat {n}, project {p}"
    return out


def core_tasks(choice, items):
    "(bundle name, [(label, task type, task_meta, items)]): one task per type, real CORE when present"
    real = real_data_dir("core_eval_bundle", "eval_bundle") if choice != "local" else None
    if choice == "real" and real is None:
        raise FileNotFoundError("--bundle real: no core_eval_bundle/eval_bundle under the real data folder "
                                "(NANOCHAT_REAL_DATA); use --bundle local")
    bundle = str(real) if real else build_local_eval_bundle(os.path.join(os.environ["NANOCHAT_BASE_DIR"],
                                                                         "local_bundle"), n_per_task=items)
    tasks, _ = load_core_config(bundle)
    out = []
    for task_type in TASK_TYPES:
        task = next((t for t in tasks if t["icl_task_type"] == task_type), None)
        if task is None or not os.path.exists(os.path.join(bundle, "eval_data", task["dataset_uri"])):
            continue
        data = load_task_data(bundle, task["dataset_uri"], items)
        out.append((task["label"], task_type, core_task_meta(task), data))
    return ("real CORE" if real else "local (offline, not CORE)"), out


def bench_core(side, model, tokenizer, tasks, repeats):
    "[(label, task type, fewshot, items, {side: problems/s}, accuracy)] of evaluate_task on both sides"
    rows = []
    for label, task_type, meta, data in tasks:
        def run():
            with autocast_ctx("cpu"):
                return evaluate_task(model, tokenizer, data, "cpu", meta)
        seconds, accs = interleaved_best(side, run, repeats)
        assert accs["nanochat"] == accs["project"], f"{label}: accuracies differ {accs}"
        rates = {name: len(data) / seconds[name] for name in SIDES}
        rows.append((label, task_type, meta["num_fewshot"], len(data), rates, accs["project"]))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="first depth, <= 4 bpb batches, <= 12 CORE items, 2 repeats")
    p.add_argument("--depths", default="4,6", help="comma-separated model depths")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=8, help="rows per bpb batch")
    p.add_argument("--bpb-steps", type=int, default=16, help="batches per bpb pass (0: skip bpb)")
    p.add_argument("--core-items", type=int, default=40, help="items per CORE task (0: skip CORE)")
    p.add_argument("--bundle", choices=("auto", "real", "local"), default="auto",
                   help="CORE data: auto = the real bundle if present, else the local one")
    p.add_argument("--repeats", type=int, default=3, help="timed passes per side (best one kept)")
    p.add_argument("--threads", type=int, default=1, help="torch threads, peak included (0: torch's default)")
    p.add_argument("--corpus", default=None, help="a directory of FineWeb-format shards (default: the offline corpus)")
    args = p.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.quick:
        args.depths = args.depths.split(",")[0]
        args.bpb_steps, args.core_items = min(args.bpb_steps, 4), min(args.core_items, 12)
        args.repeats = min(args.repeats, 2)
    corpus = bench_train.ensure_corpus(args.corpus)
    base = os.path.join(tempfile.gettempdir(), "nanochat_bench_eval")  # kept: the tokenizer is trained once
    os.environ.update(NANOCHAT_BASE_DIR=base, NANOCHAT_DATA_DIR=corpus)
    bench_train.ensure_tokenizer(base, corpus)
    from nanochat.tokenizer import get_tokenizer, get_token_bytes
    tokenizer = get_tokenizer()
    token_bytes = get_token_bytes("cpu", tokenizer=tokenizer)
    peak = bench_train.machine_report()
    side = bench_train.Side()
    depths = [int(d) for d in args.depths.split(",")]
    vocab_size = tokenizer.get_vocab_size()
    models = {d: bench_gpt.make_model(d, args.seq_len, vocab_size=vocab_size, window_pattern="L").eval()
              for d in depths}
    if args.bpb_steps > 0:
        batches = val_batches(tokenizer, args.batch_size, args.seq_len, args.bpb_steps)
        print(f"\nval bpb: evaluate_bpb, {len(batches)} batches of {args.batch_size} x {args.seq_len} tokens, "
              f"best of {args.repeats}\n")
        print("| model | seq | nanochat structure tok/s | project tok/s | speed-up | MFU nanochat | MFU project "
              "| bpb nanochat | bpb project |")
        print("|---|---|---|---|---|---|---|---|---|")
        for d in depths:
            r = bench_bpb(side, models[d], batches, token_bytes, args.repeats, peak)
            n, q = r["nanochat"], r["project"]
            print(f"| d{d} | {args.seq_len} | {n['tok_s']:,.0f} | {q['tok_s']:,.0f} | {q['tok_s'] / n['tok_s']:.2f}x "
                  f"| {n['mfu']:.1f}% | {q['mfu']:.1f}% | {n['bpb']:.6f} | {q['bpb']:.6f} |", flush=True)
    if args.core_items > 0:
        name, tasks = core_tasks(args.bundle, args.core_items)
        print(f"\nCORE: evaluate_task on the {name} bundle, one forward per item, best of {args.repeats}\n")
        print("| model | task | type | shots | items | nanochat structure problems/s | project problems/s "
              "| speed-up | accuracy (both) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for d in depths:
            for label, task_type, shots, n_items, rates, acc in bench_core(side, models[d], tokenizer, tasks,
                                                                           args.repeats):
                n, q = rates["nanochat"], rates["project"]
                print(f"| d{d} | {label} | {task_type} | {shots} | {n_items} | {n:.2f} | {q:.2f} | {q / n:.2f}x "
                      f"| {acc:.3f} |", flush=True)


if __name__ == "__main__":
    main()
