"""Tokenizer benchmark: encode throughput (MB/s, 1 and 2 threads) and training time, on the offline corpus.

    python bench/bench_tokenizer.py                      # the offline corpus (built into <tmp> on the first run)
    python bench/bench_tokenizer.py --corpus DIR --vocab-sizes 4096,32768 --repeats 3

The corpus is a directory of parquet shards with a `text` column, the last shard being validation. By default it is
the offline corpus of `python -m nanochat.dataset` (`nanochat.dataset.build_local_corpus`: the standard library's
documentation), built into <tmp>/nanochat_bench_local_corpus on the first run (about 10 s); `--corpus DIR` reads any
other directory of shards (FineWeb-Edu shards, say), and an empty one gets the offline corpus. Tokenizers are
trained on the train shards; encode throughput is measured on the val shard (UTF-8 megabytes per second of wall
time, best of --repeats), plus megabytes per CPU-second with one thread, which stays meaningful when other processes
compete for the cores (the load average is printed first). Baselines measured in the same run: the byte-level
CharLevelTokenizer and, if the optional `tokenizers` package is installed, the HuggingFace BPE tokenizer trained on
the same text at the same vocabulary size.
"""
import argparse, os, tempfile, time
import pyarrow.parquet as pq

from nanochat.dataset import ensure_data, list_parquet_files
from nanochat.tokenizer import CharLevelTokenizer, HuggingFaceTokenizer, RustBPETokenizer

DEFAULT_CORPUS = os.path.join(tempfile.gettempdir(), "nanochat_bench_local_corpus")


def load_corpus(corpus_dir):
    "(train_docs, val_docs) from the parquet shards in corpus_dir, building the offline corpus there if it has none"
    shards = list_parquet_files(ensure_data(corpus_dir))
    docs = [pq.read_table(p, columns=["text"]).column("text").to_pylist() for p in shards]
    return [d for shard in docs[:-1] for d in shard], docs[-1]


def best_time(fn, repeats):
    "Best (wall, CPU) seconds of `repeats` calls of fn"
    walls, cpus = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        c0 = time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def encode_mbps(tok, docs, nbytes, num_threads, repeats):
    "(wall MB/s, MB per CPU-second) encoding docs with `num_threads` threads (1: one document at a time)"
    if num_threads == 1:
        def fn():
            return [tok.encode(d) for d in docs]
    else:
        def fn():
            return tok.encode(docs, num_threads=num_threads)
    wall, cpu = best_time(fn, repeats)
    return nbytes / 1e6 / wall, nbytes / 1e6 / max(cpu, 1e-9)


def measure(name, tok, train_s, docs, nbytes, repeats):
    "One table row: name, vocab, train time, MB/s with 1 and 2 threads, MB per CPU-second (1 thread), bytes/token"
    mbps1, cpu1 = encode_mbps(tok, docs, nbytes, 1, repeats)
    mbps2, _ = encode_mbps(tok, docs, nbytes, 2, repeats)
    ratio = nbytes / sum(map(len, tok.encode(docs, num_threads=2)))
    return name, tok.get_vocab_size(), train_s, mbps1, mbps2, cpu1, ratio


def main():
    p = argparse.ArgumentParser(description="Tokenizer encode throughput and training time")
    p.add_argument("--corpus", default=DEFAULT_CORPUS, help="directory of parquet shards (offline corpus if empty)")
    p.add_argument("--vocab-sizes", default="4096,32768", help="comma-separated vocab sizes to train")
    p.add_argument("--repeats", type=int, default=3, help="encode timings: best of this many runs")
    args = p.parse_args()

    train_docs, docs = load_corpus(args.corpus)
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    load = os.getloadavg()[0]
    print(f"corpus: {args.corpus}: train on {sum(map(len, train_docs)) / 1e6:.1f}M chars, encode {len(docs):,} val "
          f"documents ({nbytes / 1e6:.1f} MB); {os.cpu_count()} CPUs, load average {load:.1f}")
    if load > os.cpu_count():
        print("  warning: the machine is busy (load > CPUs): wall-clock MB/s will be low; see MB/CPU-s")

    try:
        import tokenizers  # noqa: F401
    except ImportError:
        tokenizers = None
    rows = []
    char = CharLevelTokenizer()
    rows.append(measure("char (baseline)", char, None, docs, nbytes, args.repeats))
    for vocab_size in [int(v) for v in args.vocab_sizes.split(",")]:
        impls = [("rustbpe+tiktoken", RustBPETokenizer)]
        if tokenizers:
            impls.append(("huggingface", HuggingFaceTokenizer))
        for name, cls in impls:
            t0 = time.perf_counter()
            tok = cls.train_from_iterator(iter(train_docs), vocab_size)
            train_s = time.perf_counter() - t0
            rows.append(measure(name, tok, train_s, docs, nbytes, args.repeats))
            print(f"  done: {name} vocab {vocab_size}")
    if not tokenizers:
        print("  (huggingface baseline skipped: the optional `tokenizers` package is not installed)")

    print(f"\n{'tokenizer':<18} {'vocab':>7} {'train s':>8} {'MB/s 1 thr':>11} {'MB/s 2 thr':>11} {'MB/CPU-s':>9} "
          f"{'bytes/token':>12}")
    print("-" * 82)
    for name, vocab, train_s, mbps1, mbps2, cpu1, ratio in rows:
        ts = "-" if train_s is None else f"{train_s:.2f}"
        print(f"{name:<18} {vocab:>7,} {ts:>8} {mbps1:>11.1f} {mbps2:>11.1f} {cpu1:>9.1f} {ratio:>12.2f}")
    print("(MB/s = wall clock; MB/CPU-s = one thread per CPU-second; "
          "huggingface's '2 thr' is its own rayon pool over all CPUs)")

    hf = {vocab: cpu1 for name, vocab, _, _, _, cpu1, _ in rows if name == "huggingface"}
    for name, vocab, _, _, _, cpu1, _ in rows:
        if name == "rustbpe+tiktoken" and vocab in hf:
            print(f"rustbpe+tiktoken vs huggingface, vocab {vocab:,}, MB per CPU-second (1 thread): "
                  f"{cpu1 / hf[vocab]:.2f}x")


if __name__ == "__main__":
    main()
