"""The LZ78 branch's comparison at CPU scale: BPE vs LZ78 tokenizers, embedding modes and prefix smoothing, in val bpb.

Every row trains the same d4 model (256 wide, context 256, 2048 tokens per step) for the same number of steps with
base_train, on the project's offline corpus (built on first use; `--corpus DIR` reads any other), and reports validation bits per byte (plain cross-entropy, normalised by the bytes of
the targets, so tokenizers compare). The baseline, measured in the same run, is the BPE row. Tokenizers are trained on
the train shards at the same vocabulary size (4096 ids by default): BPE (rustbpe), frequency-gated LZ78 chunked (the
GPT-4 regex split first) and flat. Each tokenizer's data is pretokenized once (lz78_dataloader) and read in the same
order, but the best-fit loader packs documents by their length in tokens, so rows with different tokenizers train and
are scored (--eval-tokens val tokens) on partly different documents; rows that share a tokenizer read the same
tokens. 34_lz78_experiment says how much that matters. Rows:

    bpe, lz78 (chunked, frequency gated), lz78_flat          the tokenizer comparison, flat embedding, CE
    lz78_structured, lz78_hierarchical, lz78_tuple           the embedding modes on the chunked LZ78 tokenizer
    lz78_soft0.1, lz78_soft0.5                               soft prefix smoothing (decay 0.5) at two weights
    lz78_seed2                                               the lz78 row with another init seed: the noise level

    python bench/bench_lz78_experiment.py                          # all rows, 150 steps each (~20 min on 2 cores; 100 took 14)
    python bench/bench_lz78_experiment.py --steps 50 --rows bpe,lz78 --json /tmp/lz78_experiment.json

Not a test: it prints a table (and writes --json with the curves, which 34_lz78_experiment records and plots).
"""
import argparse, atexit, json, os, shutil, sys, tempfile, time
from unittest import mock
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_train import ensure_corpus  # the same corpus as the training bench
TOKENIZERS = {"bpe": ("bpe", None), "lz78": ("lz78", True), "lz78_flat": ("lz78", False)}  # name -> (family, chunked)
ROWS = {  # name -> (tokenizer, extra base_train flags, seed)
    "bpe": ("bpe", [], 42),
    "lz78": ("lz78", [], 42),
    "lz78_flat": ("lz78_flat", [], 42),
    "lz78_structured": ("lz78", ["--embedding-mode=structured"], 42),
    "lz78_hierarchical": ("lz78", ["--embedding-mode=hierarchical"], 42),
    "lz78_tuple": ("lz78", ["--embedding-mode=tuple"], 42),
    "lz78_soft0.1": ("lz78", ["--prefix-loss=soft", "--prefix-weight=0.1", "--prefix-decay=0.5"], 42),
    "lz78_soft0.5": ("lz78", ["--prefix-loss=soft", "--prefix-weight=0.5", "--prefix-decay=0.5"], 42),
    "lz78_seed2": ("lz78", [], 43),
}


def train_texts(max_chars, doc_cap=10_000):
    "The train shards' documents (each cut to doc_cap characters), up to max_chars characters"
    from nanochat.dataset import parquets_iter_batched
    n = 0
    for batch in parquets_iter_batched("train", data_dir=CORPUS):
        for t in batch:
            yield t[:doc_cap]
            n += min(len(t), doc_cap)
            if n >= max_chars: return


def prepare_tokenizer(work, name, vocab_size, max_chars):
    "Train and save tokenizer `name`, pretokenize the corpus with it; returns (spec, pretokenized dir, stats)"
    from nanochat.tokenizer import RustBPETokenizer, save_token_bytes
    from nanochat.lz78_tokenizer import LZ78Tokenizer
    from nanochat.lz78_dataloader import write_pretokenized
    from nanochat.dataset import parquets_iter_batched
    family, chunked = TOKENIZERS[name]
    tok_dir, pre_dir = os.path.join(work, "tok_" + name), os.path.join(work, "pre_" + name)
    spec = f"{family}:{tok_dir}"
    t0 = time.time()
    if family == "bpe": tok = RustBPETokenizer.train_from_iterator(train_texts(max_chars), vocab_size)
    else: tok = LZ78Tokenizer.train_from_iterator(train_texts(max_chars), vocab_size, "frequency_gated", chunked=chunked)
    tok.save(tok_dir)
    save_token_bytes(tok, tok_dir)
    t_train = time.time() - t0
    splits = {s: [t for b in parquets_iter_batched(s, data_dir=CORPUS) for t in b] for s in ("train", "val")}
    t0 = time.time()
    index = write_pretokenized(pre_dir, tok, splits, shard_tokens=1_000_000, tokenizer_spec=spec)
    val_bytes = sum(len(t.encode("utf-8")) for t in splits["val"])
    val_tokens = sum(index["splits"]["val"]["tokens"]) - index["splits"]["val"]["docs"]  # minus one BOS per document
    stats = {"vocab_size": tok.get_vocab_size(), "train_s": t_train, "pretokenize_s": time.time() - t0,
             "val_bytes_per_token": val_bytes / val_tokens, "train_tokens": sum(index["splits"]["train"]["tokens"])}
    print(f"tokenizer {name}: vocab {stats['vocab_size']}, trained in {t_train:.1f}s, val bytes/token "
          f"{stats['val_bytes_per_token']:.3f}, {stats['train_tokens']:,} train tokens")
    return spec, pre_dir, stats


def run_row(work, name, spec, pre_dir, args):
    "Train one row with base_train; returns its val bpb curve and timing"
    import nanochat.common as common
    import nanochat.scripts.base_train as bt
    from nanochat.common import parse_config
    _, extra, seed = ROWS[name]
    flags = [f"--depth={args.depth}", "--head-dim=64", f"--max-seq-len={args.max_seq_len}", "--device-batch-size=8",
             f"--total-batch-size={8 * args.max_seq_len}", "--window-pattern=L", f"--num-iterations={args.steps}",
             f"--eval-every={args.eval_every}", f"--eval-tokens={args.eval_tokens}", "--core-metric-every=-1",
             "--sample-every=-1", "--compile=False", "--device-type=cpu", f"--model-tag={name}",
             f"--tokenizer={spec}", f"--pretokenized-dir={pre_dir}"] + extra
    original = common.compute_init  # StageRun.init_compute looks it up in common
    def seeded(*a, **k):  # compute_init seeds 42; another seed changes only the initial weights
        out = original(*a, **k)
        torch.manual_seed(seed)
        return out
    t0 = time.time()
    with mock.patch.object(common, "compute_init", seeded):
        run = bt.train(parse_config(bt.TrainConfig, flags))
    return {"tokenizer": ROWS[name][0], "flags": extra, "seed": seed, "bpbs": run.state.bpbs,
            "final_bpb": run.state.val_bpb, "min_bpb": run.state.min_val_bpb, "params": run.num_params,
            "seconds": time.time() - t0, "final_loss": run.state.losses[-1][1]}


def main():
    p = argparse.ArgumentParser(description="BPE vs LZ78, embedding modes and prefix smoothing at CPU scale (val bpb)")
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated rows (of {','.join(ROWS)})")
    p.add_argument("--steps", type=int, default=150, help="training steps per row (2048 tokens each)")
    p.add_argument("--eval-every", type=int, default=50, help="val bpb every N steps (and at the end)")
    p.add_argument("--eval-tokens", type=int, default=32768, help="tokens per val bpb evaluation")
    p.add_argument("--vocab-size", type=int, default=4096, help="every tokenizer's vocabulary size (all ids)")
    p.add_argument("--tok-max-chars", type=int, default=5_000_000, help="characters to train each tokenizer on")
    p.add_argument("--corpus", default=None, help="a directory of FineWeb-format shards (default: the offline corpus)")
    p.add_argument("--depth", type=int, default=4, help="model depth (width 64 x depth)")
    p.add_argument("--max-seq-len", type=int, default=256, help="context length (8 sequences per step)")
    p.add_argument("--work", default="", help="working directory (default: a temp dir, removed at the end)")
    p.add_argument("--json", default="", help="write the results (rows, curves, tokenizer stats) here")
    args = p.parse_args()
    rows = args.rows.split(",")
    if set(rows) - set(ROWS): sys.exit(f"unknown rows {set(rows) - set(ROWS)}: choose from {list(ROWS)}")
    global CORPUS
    CORPUS = ensure_corpus(args.corpus)
    torch.set_num_threads(min(torch.get_num_threads(), os.cpu_count() or 1))
    work = args.work or tempfile.mkdtemp(prefix="lz78_experiment_")
    if not args.work:  # removed when the bench ends, whether it finished or not
        atexit.register(shutil.rmtree, work, ignore_errors=True)
    os.environ["NANOCHAT_BASE_DIR"], os.environ["NANOCHAT_DATA_DIR"] = work, CORPUS
    print(f"corpus {CORPUS} | work {work} | {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} | "
          f"d{args.depth}, {args.steps} steps x {8 * args.max_seq_len} tokens")
    t_start, toks, results = time.time(), {}, {}
    for name in dict.fromkeys(ROWS[r][0] for r in rows):
        toks[name] = prepare_tokenizer(work, name, args.vocab_size, args.tok_max_chars)
    for name in rows:
        spec, pre_dir, _ = toks[ROWS[name][0]]
        results[name] = run_row(work, name, spec, pre_dir, args)
        r = results[name]
        print(f"== {name}: val bpb {r['final_bpb']:.4f} (min {r['min_bpb']:.4f}) in {r['seconds']:.0f}s")
    base_row = "bpe" if "bpe" in results else rows[0]
    base = results[base_row]["final_bpb"]
    vs = f"vs {base_row}"[:8]
    print(f"\n{'row':<18} {'tokenizer':<10} {'bytes/tok':>9} {'params':>9} {'val bpb':>8} {vs:>8} {'time':>6}")
    for name in rows:
        r, st = results[name], toks[ROWS[name][0]][2]
        print(f"{name:<18} {r['tokenizer']:<10} {st['val_bytes_per_token']:>9.3f} {r['params']:>9,} {r['final_bpb']:>8.4f} "
              f"{100 * (r['final_bpb'] / base - 1):>+7.1f}% {r['seconds']:>5.0f}s")
    print(f"total {time.time() - t_start:.0f}s")
    if args.json:
        out = {"args": vars(args), "corpus": CORPUS, "tokenizers": {k: v[2] for k, v in toks.items()}, "rows": results}
        with open(args.json, "w") as f: json.dump(out, f, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
