"""LZ78 tokenizer benchmark: dictionary training time and encode throughput, against tiktoken's BPE on the same text.

    python bench/bench_lz78.py                           # the local corpus in /tmp/lz78_bench_corpus (built if missing)
    python bench/bench_lz78.py --corpus /tmp/bench_corpus --vocab-sizes 4096,32768 --repeats 3

The corpus is a directory of parquet shards with a `text` column, the last shard being validation: by default the
offline corpus of `python -m nanochat.dataset` (`nanochat.dataset.build_local_corpus`, built in a few seconds if the
directory has no shards), or any directory of FineWeb-format shards given with --corpus.
Every tokenizer is trained on the train shards and encodes the val shard one document at a time (one thread).

The baseline is measured in the same run: `RustBPETokenizer` (rustbpe + tiktoken) trained on the same text at the
same vocab size. Throughput is UTF-8 megabytes per CPU-second (best of --repeats), which stays meaningful when other
processes share the machine; wall-clock MB/s is printed too. LZ78 "cold" clears the chunk cache before each repeat
(a stream of new documents), "warm" keeps it. Targets (issue 16): LZ78 encodes at >= 1/3 of tiktoken's throughput,
and training a 4,096-code dictionary on the local corpus takes seconds.
"""
import argparse, glob, os, sys, time
import pyarrow.parquet as pq

from nanochat.tokenizer import RustBPETokenizer
from nanochat.lz78_tokenizer import LZ78Tokenizer, TRAINERS
from nanochat.dataset import build_local_corpus
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_tokenizer import best_time  # one timing helper for the tokenizer benches

TARGET_FRACTION = 1 / 3  # of tiktoken's encode throughput: the course's own goal for LZ78 encoding speed


def load_corpus(corpus_dir):
    "(train_docs, val_docs) from the parquet shards in corpus_dir, building the local corpus there if it has none"
    shards = sorted(glob.glob(os.path.join(corpus_dir, "*.parquet")))
    if not shards:
        print(f"No shards in {corpus_dir}: building the local corpus there (nanochat.dataset.build_local_corpus)")
        build_local_corpus(corpus_dir)
        shards = sorted(glob.glob(os.path.join(corpus_dir, "*.parquet")))
    docs = [pq.read_table(p, columns=["text"]).column("text").to_pylist() for p in shards]
    return [d for shard in docs[:-1] for d in shard], docs[-1]


def timed_train(fn):
    "(result, wall seconds) of fn()"
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def encode_rates(tok, docs, nbytes, repeats, cold=False):
    "(wall MB/s, MB per CPU-second) encoding docs one at a time; cold: empty the LZ78 chunk cache first"
    def run():
        if cold: tok._cache.clear()
        for d in docs: tok.encode(d)
    wall, cpu = best_time(run, repeats)
    return nbytes / 1e6 / wall, nbytes / 1e6 / max(cpu, 1e-9)


def main():
    p = argparse.ArgumentParser(description="LZ78 tokenizer training time and encode throughput vs tiktoken BPE")
    p.add_argument("--corpus", default="/tmp/lz78_bench_corpus", help="directory of parquet shards (built if empty)")
    p.add_argument("--vocab-sizes", default="4096,32768", help="comma-separated vocab sizes (all ids)")
    p.add_argument("--strategies", default=",".join(TRAINERS), help="comma-separated LZ78 strategies")
    p.add_argument("--repeats", type=int, default=3, help="encode timings: best of this many runs")
    args = p.parse_args()

    train_docs, docs = load_corpus(args.corpus)
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    load = os.getloadavg()[0]
    print(f"corpus: {args.corpus}: train on {sum(map(len, train_docs)) / 1e6:.1f}M chars, encode {len(docs):,} val "
          f"documents ({nbytes / 1e6:.2f} MB); {os.cpu_count()} CPUs, load average {load:.1f}")
    if load > os.cpu_count(): print("  warning: the machine is busy: wall-clock numbers will be low; see MB/CPU-s")

    rows, ratios = [], []
    for vocab_size in [int(v) for v in args.vocab_sizes.split(",")]:
        bpe, train_s = timed_train(lambda: RustBPETokenizer.train_from_iterator(iter(train_docs), vocab_size))
        wall, cpu = encode_rates(bpe, docs, nbytes, args.repeats)
        ratio = nbytes / sum(len(bpe.encode(d)) for d in docs)
        rows.append(("BPE rustbpe+tiktoken", "-", vocab_size, train_s, wall, cpu, None, ratio, 1.0))
        bpe_cpu = cpu
        for strategy in args.strategies.split(","):
            for chunked in (True, False):
                tok, train_s = timed_train(lambda: LZ78Tokenizer.train_from_iterator(
                    iter(train_docs), vocab_size, strategy=strategy, chunked=chunked))
                tok.encode("warm up: compile the matcher")
                wall, cpu = encode_rates(tok, docs, nbytes, args.repeats, cold=True)
                _, warm_cpu = encode_rates(tok, docs, nbytes, args.repeats)
                ratio = nbytes / sum(len(tok.encode(d)) for d in docs)
                rows.append((f"LZ78 {strategy}", "yes" if chunked else "no", tok.get_vocab_size(), train_s, wall, cpu,
                             warm_cpu, ratio, cpu / bpe_cpu))
                ratios.append((cpu / bpe_cpu, f"{strategy} chunked={chunked} vocab {vocab_size}"))
                print(f"  done: {strategy} chunked={chunked} vocab {vocab_size}", flush=True)
    fg4096, fg4096_s = timed_train(lambda: LZ78Tokenizer.train_from_iterator(iter(train_docs), 4096 + 266))

    print(f"\n{'tokenizer':<22} {'chunked':>7} {'vocab':>7} {'train s':>8} {'MB/s':>6} {'MB/CPU-s':>9} "
          f"{'warm':>6} {'bytes/tok':>9} {'x tiktoken':>10}")
    print("-" * 93)
    for name, chunked, vocab, train_s, wall, cpu, warm, ratio, rel in rows:
        warm_s = "-" if warm is None else f"{warm:.1f}"
        print(f"{name:<22} {chunked:>7} {vocab:>7,} {train_s:>8.2f} {wall:>6.1f} {cpu:>9.1f} {warm_s:>6} "
              f"{ratio:>9.2f} {rel:>10.2f}")
    print("(MB/s: wall clock, cold cache; MB/CPU-s: per CPU-second, cold cache; warm: MB/CPU-s with the chunk cache "
          "kept; x tiktoken: cold MB/CPU-s over the BPE row's)")

    worst, where = min(ratios)
    verdict = "reached" if worst >= TARGET_FRACTION else "not reached"
    print(f"\ntarget (the course's goal): LZ78 encode >= 1/3 of tiktoken's throughput (MB/CPU-s, same text, same run): {verdict} "
          f"(slowest: {worst:.2f} x, {where})")
    print(f"training a 4,096-code dictionary (frequency_gated, chunked, vocab {fg4096.get_vocab_size():,}) on "
          f"{sum(map(len, train_docs)) / 1e6:.1f}M chars: {fg4096_s:.1f}s")


if __name__ == "__main__":
    sys.exit(main())
