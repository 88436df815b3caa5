"""Data loader throughput vs. how fast a small model consumes tokens, on the offline corpus.

    python bench/bench_dataloader.py [--seconds 2] [--reps 3] [--B 8] [--T 512] [--corpus DIR]

Measures, in one run and on this machine:
- the raw tokenizer rate (encode only, 1 thread): an upper bound for any loader;
- the greedy stream loader and the best-fit loader (tokens yielded per second, 1 and 2 tokenizer threads);
- the best-fit loader with nanochat's O(buffer) scan instead of the sorted buffer (the baseline of the bisect);
- both best-fit variants fed pre-tokenized documents: the loader's own cost (parquet, packing, copies);
- the training consumption rate: forward+backward of a d4 GPT at the same B, T on the CPU;
- the crop % of greedy-crop vs best-fit-crop on the corpus at T and 2048 (best fit in its steady state), and the floor.

Corpus: a directory of parquet shards with a `text` column, the last shard being validation. By default it is the
offline corpus of `python -m nanochat.dataset` (`nanochat.dataset.build_local_corpus`: the standard library's
documentation), built into <tmp>/nanochat_bench_local_corpus on the first run (about 10 s). `--corpus DIR` reads
any other directory of shards (FineWeb-Edu shards, say); an empty one gets the offline corpus. The tokenizer is a
vocab-4096 RustBPE trained on the train shards at the start of every run (a few seconds).
"""
import argparse, bisect, os, random, tempfile, time
import pyarrow.parquet as pq
import torch

from nanochat.dataset import ensure_data, list_parquet_files
from nanochat.tokenizer import RustBPETokenizer

DEFAULT_CORPUS = os.path.join(tempfile.gettempdir(), "nanochat_bench_local_corpus")


def ensure_corpus(corpus_dir):
    "Shard paths of `corpus_dir`, building the offline corpus there first if it has no shards"
    return list_parquet_files(ensure_data(corpus_dir))


def read_texts(files):
    "All documents of the parquet files, in order"
    return [t for f in files for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]


def measure(fn, seconds):
    "Tokens/s (wall clock, and per CPU second of this process) of calling `fn` (which returns its token count)"
    n = 0
    w0 = time.perf_counter()
    c0 = time.process_time()
    while time.perf_counter() - w0 < seconds:
        n += fn()
    return n / (time.perf_counter() - w0), n / (time.process_time() - c0)


class ScanBuffer:
    "nanochat's buffer: a list scanned in full for every pick (same interface and same choices as BestFitBuffer)"
    def __init__(self):
        self.docs = []
        self.ids = []

    def __len__(self):
        return len(self.docs)

    def add(self, doc, length=None, doc_id=None):
        self.docs.append(doc)
        self.ids.append(doc_id)

    def pop_largest_fitting(self, space):
        best_idx, best_len = -1, 0
        for i, doc in enumerate(self.docs):
            if best_len < len(doc) <= space:
                best_idx, best_len = i, len(doc)
        if best_idx < 0:
            return None
        self.ids.pop(best_idx)
        doc = self.docs.pop(best_idx)
        return doc, len(doc)
    def pop_shortest(self):
        i = min(range(len(self.docs)), key=lambda i: len(self.docs[i]))
        self.ids.pop(i)
        doc = self.docs.pop(i)
        return doc, len(doc)


class CachedTokenizer:
    "Hands out precomputed token lists: the loader's own cost (parquet reads, packing, copies) without tokenization"
    def __init__(self, tok, texts, bos):
        self.bos, self.cache = bos, dict(zip(texts, tok.encode(texts, prepend=bos, num_threads=1)))
    def get_bos_token_id(self): return self.bos
    def encode(self, texts, prepend=None, num_threads=None): return [self.cache[t] for t in texts]


def crop_stats(lengths, T, buffer_size=1000, passes=16, seed=0):
    "(greedy-crop %, best-fit-crop %, theoretical minimum %, saturated) for rows of T+1"
    from nanochat.dataloader import BestFitBuffer, bestfit_fill_row
    cap = T + 1
    used = pos = 0
    for L in lengths:  # greedy-crop: documents in order, the one that does not fit is cropped
        n = min(L, cap - pos)
        used, pos = used + n, (pos + n) % cap
    greedy = 100 * (1 - used / sum(lengths))
    rng = random.Random(seed)
    stream = (L for _ in range(passes) for L in rng.sample(lengths, len(lengths)))
    buf = BestFitBuffer()
    rows = []
    start = None  # the first row once 90% of the buffer is documents longer than a row: the steady state
    def refill():
        while len(buf) < buffer_size:
            L = next(stream)
            buf.add(L, L)
    try:
        while True:
            rows.append(bestfit_fill_row(buf, cap, refill))
            if start is None and bisect.bisect_right(buf.lengths, cap) < len(buf) // 10:
                start = len(rows)
    except StopIteration:
        pass
    rows = rows[start:] if start is not None else rows[len(rows) // 2:]  # never saturated: the second half
    used = sum(n for r in rows for _, n in r)
    total = sum(L for r in rows for L, _ in r)
    minimum = 100 * sum(max(0, L - cap) for L in lengths) / sum(lengths)
    return greedy, 100 * (1 - used / total), minimum, start is not None


def training_rate(vocab_size, B, T, steps=5):
    "Tokens/s of forward+backward of a d4 GPT on the CPU: its fastest of `steps` steps (as the loaders' best)"
    from nanochat.gpt import GPT, GPTConfig
    torch.manual_seed(0)
    config = GPTConfig(sequence_len=T, vocab_size=vocab_size, n_layer=4, n_head=4, n_kv_head=4, n_embd=256)  # d4
    with torch.device("meta"):
        model = GPT(config)
    model.to_empty(device="cpu")
    model.init_weights()
    x = torch.randint(0, vocab_size, (B, T))
    y = torch.randint(0, vocab_size, (B, T))
    def step():
        loss = model(x, y)
        loss.backward()
        model.zero_grad(set_to_none=True)
    step()
    best = float("inf")
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t0)
    return B * T / best


def main():
    ap = argparse.ArgumentParser(description="Data loader throughput vs. a small model's training rate")
    ap.add_argument("--seconds", type=float, default=2.0, help="measuring time per loader and repetition")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (the best is reported)")
    ap.add_argument("--B", type=int, default=8)
    ap.add_argument("--T", type=int, default=512)
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="directory of parquet shards (offline corpus if empty)")
    args = ap.parse_args()
    B, T = args.B, args.T

    files = ensure_corpus(args.corpus)
    texts = read_texts(files[:-1])  # the train split
    t0 = time.perf_counter()
    tok = RustBPETokenizer.train_from_iterator(iter(texts), 4096)
    train_s = time.perf_counter() - t0
    import nanochat.dataloader as dl
    bos = tok.get_bos_token_id()
    print(f"corpus {args.corpus}: {len(files)} shards; tokenizer: RustBPE vocab {tok.get_vocab_size()} "
          f"trained on the train shards in {train_s:.1f}s")
    print(f"B={B} T={T}, {torch.get_num_threads()} torch threads, {os.cpu_count()} CPUs, "
          f"load average at start {os.getloadavg()[0]:.1f}")
    if os.getloadavg()[0] > os.cpu_count():
        print("  warning: the machine is busy (load > CPUs): wall-clock rates will be low; see the per-CPU-s column")

    lengths = [len(ids) for ids in tok.encode(texts, prepend=bos, num_threads=1)]
    print(f"train split: {len(texts)} documents, {sum(lengths):,} tokens, "
          f"mean {sum(lengths) / len(lengths):.0f} per document")

    chunks = [texts[i:i + 128] for i in range(0, len(texts), 128)]
    chunk_iter = iter([])
    def encode_next():
        nonlocal chunk_iter
        chunk = next(chunk_iter, None)
        if chunk is None:
            chunk_iter = iter(chunks)
            chunk = next(chunk_iter)
        return sum(len(ids) for ids in tok.encode(chunk, prepend=bos, num_threads=1))

    def batches(loader):
        for _ in range(3):
            next(loader)  # warm-up: for best fit this fills the 1000-document buffer
        return lambda: next(loader)[0].numel()

    kw = dict(B=B, T=T, split="train", device="cpu", data_dir=os.path.dirname(files[0]))
    greedy = dl.tokenizing_distributed_data_loader
    bestfit = dl.tokenizing_distributed_data_loader_bos_bestfit
    configs = [("tokenizer alone (encode, 1 thread)", encode_next)]
    for threads in (1, 2):
        configs.append((f"greedy stream, {threads} thread(s)", batches(greedy(tok, tokenizer_threads=threads, **kw))))
    for threads in (1, 2):
        configs.append((f"best-fit (sorted buffer), {threads} thread(s)",
                        batches(bestfit(tok, tokenizer_threads=threads, **kw))))
    cached = CachedTokenizer(tok, texts, bos)
    configs.append(("best-fit, pre-tokenized (no tokenizer)", batches(bestfit(cached, **kw))))
    sorted_buffer = dl.BestFitBuffer
    dl.BestFitBuffer = ScanBuffer  # the loader looks the class up when it starts
    try:
        configs.append(("best-fit (nanochat's scan), 1 thread", batches(bestfit(tok, tokenizer_threads=1, **kw))))
        configs.append(("best-fit (nanochat's scan), pre-tokenized", batches(bestfit(cached, **kw))))
    finally:
        dl.BestFitBuffer = sorted_buffer
    results = {name: [] for name, _ in configs}
    for _ in range(args.reps):  # interleaved repetitions, best of each: the machine may be shared
        for name, fn in configs:
            results[name].append(measure(fn, args.seconds))
    train = training_rate(tok.get_vocab_size(), B, T)

    print(f"\nbest of {args.reps} x {args.seconds:g} s          {'M tok/s (wall)':>15} {'M tok/s per CPU s':>18}")
    best = {name: (max(w for w, _ in r), max(c for _, c in r)) for name, r in results.items()}
    for name, (wall, cpu) in best.items():
        print(f"{name:<42} {wall / 1e6:>15.3f} {cpu / 1e6:>18.3f}")
    print(f"{'d4 GPT fwd+bwd on CPU (training rate)':<42} {train / 1e6:>15.4f}   ({train:,.0f} tok/s)")
    bestfit_rate = max(best[f"best-fit (sorted buffer), {t} thread(s)"][0] for t in (1, 2))
    per_cpu = best["best-fit (sorted buffer), 1 thread(s)"][1]
    tokenizer_rate = best["tokenizer alone (encode, 1 thread)"][1]
    load_now = os.getloadavg()[0]
    print(f"\nbest-fit loader: {bestfit_rate / 1e6:.3f} M tok/s wall clock (load average now {load_now:.1f}), "
          f"{per_cpu / 1e6:.3f} M tok/s per CPU second with 1 thread")
    pretokenized = best["best-fit, pre-tokenized (no tokenizer)"][1]
    print(f"fed pre-tokenized documents it is {pretokenized / per_cpu:.1f}x faster per CPU second: tokenization "
          f"({tokenizer_rate / 1e6:.2f} M tok/s per CPU second alone) sets the pace, and cropped tokens are tokenized "
          f"for nothing (crop % in the table below)")
    pairs = [("1 thread", "best-fit (sorted buffer), 1 thread(s)"),
             ("pre-tokenized", "best-fit, pre-tokenized (no tokenizer)")]
    for what, mine in pairs:
        scan = best["best-fit (nanochat's scan), " + what]
        print(f"sorted buffer vs nanochat's scan ({what}, tokens per CPU second): {best[mine][1] / scan[1]:.2f}x")
    print(f"the loader makes tokens {bestfit_rate / train:,.0f}x faster than a d4 model consumes them on this CPU")

    print("\ncrop % on this corpus (buffer 1000; best fit once 90% of the buffer is longer than a row):")
    print(f"{'T':>6} {'greedy-crop':>12} {'best-fit-crop':>14} {'floor':>7}")
    for T_ in sorted({T, 2048}):
        g, b, m, saturated = crop_stats(lengths, T_)
        note = "" if saturated else "  (buffer never saturated: below the floor for as long as the run lasts)"
        print(f"{T_:>6} {g:>12.1f} {b:>14.1f} {m:>7.1f}{note}")


if __name__ == "__main__":
    main()
