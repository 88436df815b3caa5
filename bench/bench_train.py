"""Training throughput on the CPU: this project's base_train loop next to nanochat's step structure, in one run.

    python bench/bench_train.py                  # d4/d6 x seq 256/512, eager and compiled, + val bpb
    python bench/bench_train.py --quick          # d4 seq 256 eager only
    python bench/bench_train.py --bpb-steps 0    # throughput only
    python bench/bench_train.py --bpb-only       # the val-bpb comparison only (3 seeds; --bpb-seeds 1: seed 42 only)
    python bench/bench_train.py --corpus DIR     # any directory of FineWeb-format shards
    python bench/bench_train.py --mode compiled  # the compiled rows only (--mode eager: the eager rows only)
    python bench/bench_train.py --profile        # where a d4 step's time goes: by phase, and its matmuls by shape
    python bench/bench_train.py --op-times       # the same without the profiler: each operator's wall-clock time

What a CPU without AVX-512 and bf16 units gets, on one that has them (torch's kernels, oneDNN and MKL capped at
AVX2; the bf16 probe then finds bf16 slow, so everything runs in fp32; inductor generates AVX2 code):
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
        TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_avx2 python bench/bench_train.py
Give the capped run its own inductor cache: torch 2.13's cache does not tell kernels built for AVX2 from AVX-512
ones, and a kernel built for the other width computes garbage (measured: a nan loss from the first step, and a
heap corruption in the next uncapped run, until /tmp/torchinductor_$USER was deleted). Every row checks that both
sides' training loss is finite and says so when it is not: the speed of a run that computes nan means nothing.

Both sides run the same loop (`nanochat.scripts.base_train.train`: same data, tokenizer, model, init, schedules and
optimizers), once as this project ships it and once with nanochat's step structure (a91743c) swapped in:
- the loss: logits materialised (B*T, vocab) in fp32, `15 * tanh(logits / 15)`, `F.cross_entropy` (the project fuses
  `lm_head` and the loss in row chunks on the CPU; see the GPT notebook);
- the MLP's `F.relu(x).square()` as two autograd operators (the project's `ReluSquared` has a one-pass backward);
- RMSNorm as `F.rms_norm`, which autograd differentiates as its pieces on the CPU (the project's `RMSNormCPU` has a
  hand-written backward when training in fp32 on the CPU);
- attention: nanochat's SDPA fallback (`is_causal`, or a mask built at each call for a window); the project's, which
  on a CPU runs causal self-attention in blocks of 64 queries where that pays (bf16, a window, a compiled training
  step, training on 512 tokens or more, or on 256 where freed memory is kept: see the attention notebook and
  bench_attention.py);
- Muon's Polar Express step as `B = b*A + c*(A @ A); X = a*X + B @ X` (the project folds the scaling and the sum into
  the matmul with `baddbmm`, on a CPU multiplies three of the four half-size blocks of the products known to be
  symmetric: `X @ X.mT`, `A @ A`, and in fp32 the Gram iteration's, and hands a tall matrix's result back in its own
  layout rather than as a transposed view);
- the linear layers: nanochat's `nn.Linear`, whose fp32 products on a CPU go to torch's BLAS (MKL); the project's
  `Linear` calls oneDNN instead where a probe of the product's shape finds it faster (`linear_library`), and so
  can the fused loss's logits and input gradient; each weight gradient goes to oneDNN where a probe of its own shape
  finds it faster (`weight_grad_library`: capped at AVX2 some shapes, with AVX-512 on an AMD CPU, which MKL does not use
  there, all of them);
- compiled mode: the model and the Muon step are compiled on both sides (nanochat always compiles its Muon step;
  the project compiles it when `--compile=1`); eager mode compiles nothing on either side;
- precision: nanochat trains in fp32 on every CPU (autocast only on CUDA); the project trains under bf16 autocast
  where `cpu_bf16_matmul_is_fast()` finds bf16 units (AVX512-BF16, AMX), else in fp32 too. Muon's orthogonalization
  is bf16 on both sides on such a CPU (nanochat casts it to bf16 everywhere) and fp32 on both sides otherwise.
AdamW is torch's fused kernel on both sides (nanochat's own compiled AdamW step is not rebuilt here). The project's
`compute_init` tells glibc to keep freed memory (`common.keep_freed_memory`: fewer page faults per step); that holds
for the whole process, so nanochat's side runs with it too (nanochat itself keeps the C library's defaults), and the
ratio does not count it.

Every row interleaves the two sides step by step in one process (the machine's speed drifts over minutes, and one
compiled run alone swung 20-30% between processes on a busy machine; taking turns cancels that), and where the project
trains in bf16 it adds a third run, the project in fp32, so the table shows what the code gains and what the
precision gains. Compiled rows too: both sides' graphs live in the process at once, and dynamo's guards on the
swapped functions (`GPT.forward`, `_quintic_iteration`, ...) pick each side's graph at every call, so after each
side's first steps nothing compiles again (a row says so if something did during the timed steps, and marks itself
invalid if a side compiled no graph of its own, i.e. ran the other side's).
Setup: a corpus built by the project's own offline builder (`nanochat.dataset.ensure_data`), a vocab-4096 BPE
tokenizer trained on it, batch 8 rows, one micro-step per optimizer step, window L, head_dim 64, base_train's
defaults otherwise. Speed is the median step after warm-up (the speed-up also shows the quartiles of the
ratios of the steps the sides took one after the other); MFU is model FLOPs per token (6N + attention) x tokens/s
over the matmul peak of the dtype the side trains in (in fp32, the faster of MKL and oneDNN; the project's fp32 run
beside its bf16 one: over the fp32 peak): in the final table,
the highest of the peaks measured at start and after every row (a peak measured while the machine is busy comes out
low); beside it, the quartiles of the steps' MFUs. The val-bpb rows train 200 steps (d4,
seq 256, eager) on each side, and on the project in fp32 too where it trains in bf16, from each of three seeds (the
same data), and compare the means. How much one run can tell: scaling the fused loss's dL/dx by (1 + 2^-22), a
rounding-level change, moved the fp32 project's val bpb from 2.0382 to 2.0457 (+0.37%, with the loss cap as a tanh,
on a CPU with bf16 units, where Muon orthogonalizes in bf16); computing the cap as a sigmoid instead (05_gpt) gave
2.0459; and across seeds 42, 1 and 2 (capped, fp32) nanochat's structure gave 2.0378, 2.0351 and 2.0411, the
project 2.0495, 2.0294 and 2.0249. A difference of a few tenths of a percent in one run is within what rounding
alone does; the mean over seeds is what the goal reads.
Beside each speed-up, the FLOP ratio: nanochat's matmul FLOPs per step over the project's (the model's are the same
on both sides; Muon's are not), the speed-up if every matmul ran at one speed and nothing else took time.
Not a test: it prints tables. Read ratios from one run, on a quiet machine.
"""
import argparse, atexit, collections, contextlib, os, re, shutil, statistics, tempfile, time
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

CORPUS = os.path.join(tempfile.gettempdir(), "nanochat_bench_local_corpus")


def cpu_report():
    "One line: CPU model, the SIMD / matrix features torch can use, torch's kernel level, threads, bf16 probe"
    from nanochat.common import cpu_bf16_matmul_is_fast, cpu_matmul_backend
    import nanochat.common as common
    model, flags = "unknown CPU", set()
    if os.path.exists("/proc/cpuinfo"):
        text = open("/proc/cpuinfo").read()
        m = re.search(r"model name\s*:\s*(.*)", text)
        model = m.group(1).strip() if m else model
        m = re.search(r"flags\s*:\s*(.*)", text)
        flags = set(m.group(1).split()) if m else flags
    wanted = ["avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16"]
    found = [f for f in wanted if f in flags] or ["(flags not readable)"]
    level = torch.backends.cpu.get_cpu_capability()
    fast = cpu_bf16_matmul_is_fast()
    return (f"{model} | features: {' '.join(found)} | torch kernels: {level} | {torch.get_num_threads()} threads "
            f"| bf16 matmul {'fast (bf16 units)' if fast else 'slow: fp32 everywhere'} "
            f"| fp32 matmuls: {cpu_matmul_backend()}, their weight gradients: {common._cpu_weight_grad}")


def library_report():
    "The products' and weight gradients' shapes timed in this process and the library each went to ('' if none was)"
    import nanochat.common as common
    lines = []
    products = sorted(common._linear_shapes.items())
    if products:
        lines.append("products (rows, M, K, weight contiguous) -> library: "
                     + ", ".join(f"{k} {v}" for k, v in products))
    shapes = sorted(common._weight_grad_shapes.items())
    if shapes:
        lines.append("weight gradients (rows, M, K) -> library: " + ", ".join(f"{k} {v}" for k, v in shapes))
    return "\n".join(lines)


def check_inductor_cache():
    "Refuse to compile with torch's kernels capped (ATEN_CPU_CAPABILITY) into the default inductor cache (see the top)"
    if os.environ.get("ATEN_CPU_CAPABILITY") and not os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        raise SystemExit("ATEN_CPU_CAPABILITY is set but TORCHINDUCTOR_CACHE_DIR is not: the capped run would share "
                         "inductor's default cache with uncapped runs, and kernels built for the other vector width "
                         "compute garbage. Set TORCHINDUCTOR_CACHE_DIR to a directory of its own (e.g. "
                         "/tmp/inductor_avx2), or run --mode eager.")


def measure_peaks():
    "The matmul peak (FLOP/s) of each dtype a run here can train in: fp32, and bf16 where the probe finds it fast"
    from nanochat.common import get_peak_flops, cpu_bf16_matmul_is_fast
    dtypes = [torch.float32] + ([torch.bfloat16] if cpu_bf16_matmul_is_fast() else [])
    return {dtype: get_peak_flops('cpu', dtype) for dtype in dtypes}


def machine_report():
    "Print the CPU's features, torch, the matmul peaks measured now and the load; returns the fp32 peak (FLOP/s)"
    from nanochat.common import keep_freed_memory
    kept = keep_freed_memory()  # what compute_init does on the CPU, done here so that the peaks below run with it
    print(cpu_report() + f" | freed memory kept (glibc): {'yes' if kept else 'no'}")
    load = os.getloadavg()[0]
    peaks = measure_peaks()
    PEAKS.update(peaks)
    bf16 = f", bf16 {peaks[torch.bfloat16] / 1e9:.0f} GFLOP/s" if torch.bfloat16 in peaks else ""
    print(f"torch {torch.__version__}, matmul peak measured now: fp32 {peaks[torch.float32] / 1e9:.0f} GFLOP/s{bf16}, "
          f"load average {load:.2f}" + ("  (busy machine: numbers are low and noisy)" if load > 1.5 else ""))
    return peaks[torch.float32]


def ensure_corpus(corpus=None):
    "A directory of shards: `corpus` as given, else the project's offline corpus (built on first use)"
    from nanochat.dataset import ensure_data, list_parquet_files
    return os.path.dirname(list_parquet_files(ensure_data(corpus or CORPUS))[0])


def ensure_tokenizer(base, corpus):
    "A vocab-4096 BPE tokenizer trained on the corpus, under `base`/tokenizer"
    from nanochat.tokenizer import RustBPETokenizer, save_token_bytes
    from nanochat.dataset import parquets_iter_batched
    tok_dir = os.path.join(base, "tokenizer")
    if os.path.exists(os.path.join(tok_dir, "token_bytes.pt")):
        return

    def texts():
        n = 0
        for batch in parquets_iter_batched("train", data_dir=corpus):
            for t in batch:
                yield t[:10000]
                n += len(t)
                if n > 50_000_000:
                    return

    t0 = time.time()
    tok = RustBPETokenizer.train_from_iterator(texts(), 4096)
    tok.save(tok_dir)
    save_token_bytes(tok, tok_dir)
    print(f"trained the vocab-4096 tokenizer in {time.time() - t0:.1f}s")


# --- nanochat's step structure (a91743c), swapped in for the baseline -------------------------------------------
def nanochat_forward(self, idx, targets=None, kv_cache=None, loss_reduction='mean'):
    "GPT.forward as nanochat writes it: the logits are materialised, capped with tanh, then F.cross_entropy"
    from nanochat.gpt import norm
    B, T = idx.size()
    T0 = 0 if kv_cache is None else kv_cache.get_pos()
    cos_sin = self.cos[:, T0:T0 + T], self.sin[:, T0:T0 + T]
    x = norm(self.transformer.wte(idx))
    x0 = x
    for i, block in enumerate(self.transformer.h):
        x = self.resid_lambdas[i] * x + self.x0_lambdas[i] * x0
        ve = self.value_embeds[str(i)](idx) if str(i) in self.value_embeds else None
        x = block(x, ve, cos_sin, self.window_sizes[i], kv_cache)
    x = norm(x)
    softcap = 15
    logits = self.lm_head(x)[..., :self.config.vocab_size].float()
    logits = softcap * torch.tanh(logits / softcap)
    if targets is None:
        return logits
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1,
                           reduction=loss_reduction)


def nanochat_mlp_forward(self, x):
    "MLP.forward as nanochat writes it: autograd records relu and square separately"
    return self.c_proj(F.relu(self.c_fc(x)).square())


def nanochat_norm(x):
    "norm as nanochat writes it"
    return F.rms_norm(x, (x.size(-1),))


def nanochat_rotary(x, cos, sin):
    "apply_rotary_emb as nanochat writes it: autograd records every product, sum and the cat"
    d = x.shape[3] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos + x2 * sin, x1 * (-sin) + x2 * cos], 3)


def nanochat_quintic(G, coeffs, norm_scale, eps, dtype):
    "Polar Express as nanochat writes it: the polynomial with separate scale, matmul and add"
    from nanochat.common import get_orth_dtype
    X = G.to(get_orth_dtype(G.device, dtype))
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) * norm_scale + eps)
    for a, b, c in coeffs:
        A = X @ X.mT
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    return X.mT if tall else X


def nanochat_sdpa_attention(q, k, v, causal, window_size):
    "The SDPA fallback as nanochat writes it: is_causal for full context, else a mask built at every call"
    Tq, Tk = q.size(2), k.size(2)
    window = window_size[0]
    gqa = q.size(1) != k.size(1)
    if (window < 0 or window >= Tq) and Tq == Tk:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    if Tq == 1:
        if 0 <= window < Tk:
            k, v = k[:, :, max(0, Tk - (window + 1)):], v[:, :, max(0, Tk - (window + 1)):]
        return F.scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=gqa)
    row = (Tk - Tq) + torch.arange(Tq, device=q.device)[:, None]
    col = torch.arange(Tk, device=q.device)[None, :]
    mask = col <= row
    if 0 <= window < Tk:
        mask = mask & ((row - col) <= window)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)


NANOCHAT_LINEAR_FORWARD = torch.nn.Linear.forward  # nanochat's layers: the BLAS for every product, whichever is faster


@contextlib.contextmanager
def nanochat_linear():
    "The model's `Linear` layers as nanochat's `nn.Linear` for a while (the project's may call oneDNN: 00_common)"
    import nanochat.gpt as gpt
    forward = gpt.Linear.forward
    gpt.Linear.forward = NANOCHAT_LINEAR_FORWARD
    try:
        yield
    finally:
        gpt.Linear.forward = forward


class Side:
    "Switch the process between the project's code and nanochat's step structure"
    def __init__(self):
        import nanochat.gpt as gpt, nanochat.optim as optim, nanochat.flash_attention as attention
        self.gpt, self.optim, self.attention = gpt, optim, attention
        self.project = (gpt.GPT.forward, gpt.MLP.forward, gpt.norm, gpt.apply_rotary_emb, optim._quintic_iteration,
                        attention._sdpa_attention, gpt.Linear.forward)

    def use(self, side, reset=True, dtype=None):
        forward, mlp_forward, norm, rotary, quintic, sdpa_attention, linear_forward = self.project \
            if side == "project" else (nanochat_forward, nanochat_mlp_forward, nanochat_norm, nanochat_rotary,
                                       nanochat_quintic, nanochat_sdpa_attention, NANOCHAT_LINEAR_FORWARD)
        # nanochat trains in fp32 on every CPU; the project in bf16 where the probe finds bf16 units, or in `dtype`.
        # Read when a run is set up (StageRun.init_compute): it only matters for runs set up after this call.
        if side == "nanochat" or dtype is not None:
            os.environ["NANOCHAT_DTYPE"] = "float32" if side == "nanochat" else dtype
        else:
            os.environ.pop("NANOCHAT_DTYPE", None)
        self.gpt.GPT.forward = forward
        self.gpt.MLP.forward = mlp_forward
        self.gpt.Linear.forward = linear_forward
        self.gpt.norm = norm  # a module global: the blocks and attention look it up at each call
        self.gpt.apply_rotary_emb = rotary  # likewise
        self.optim._quintic_iteration = quintic
        self.attention._sdpa_attention = sdpa_attention  # a module global: flash_attn_func looks it up at each call
        if reset:
            self.optim._compiled_muon_step = None  # a compiled Muon step belongs to one side
            torch._dynamo.reset()


PEAKS = {}  # dtype -> matmul peak: the highest of the measurements taken at start and after every row, so that
# every row of the final table divides by the same number and a measurement taken while the machine was busy
# (which comes out low and makes MFU look high) does not set it. A run's MFU divides by its train_dtype's peak.


def mfu(run, tok_s):
    "A run's MFU: model FLOPs per token x tokens/s over the peak of the dtype it trains in"
    return run.num_flops_per_token * tok_s / PEAKS[run.train_dtype]


def mfu_text(m, seq):
    """A side's MFU in a row as printed: the median step's, and in brackets the quartiles of its steps' MFUs (how far
    the machine moved the steps: a goal inside that range is not met or missed by that one number)"""
    steps = [mfu(m["run"], 8 * seq / t) for t in m["times"]]
    low, _, high = statistics.quantiles(steps, n=4)
    return f"{100 * mfu(m['run'], m['tok_s']):.1f}% ({100 * low:.1f}-{100 * high:.1f})"


WARMUP = 10  # steps left out of the timing: compiling, and the allocator and page faults of a fresh run
BPB_SEEDS = (42, 1, 2)  # the val-bpb comparison's seeds: 42 is compute_init's


def train_flags(depth, seq, compile_, steps, tag, window="L"):
    "base_train flags of a throughput row: batch 8 rows, one micro-step, window L (or `window`), head_dim 64"
    return [f"--depth={depth}", "--head-dim=64", f"--max-seq-len={seq}", "--device-batch-size=8",
            f"--total-batch-size={8 * seq}", f"--window-pattern={window}", f"--num-iterations={steps}",
            "--eval-every=-1", "--core-metric-every=-1", "--sample-every=-1", f"--compile={int(compile_)}",
            "--device-type=cpu", f"--model-tag={tag}"]


def variants():
    "label -> (side, dtype): both sides, and the project in fp32 too where it trains in bf16 (what precision buys)"
    out = {"nanochat": ("nanochat", None), "project": ("project", None)}
    if torch.bfloat16 in PEAKS:
        out["project fp32"] = ("project", "float32")
    return out


def in_turn(items, round_):
    "`items` (a list) in round `round_`'s order: who goes first rotates, so a machine that drifts hits them alike"
    k = round_ % len(items)
    return items[k:] + items[:k]


def measure_interleaved(use, labels, depth, seq, steps, compile_=False, window="L"):
    """Runs that live in one process and take turns step by step (who goes first rotates), so a machine that speeds
    up or slows down over time hits them alike. `use(label, reset)` switches the process to a label's code: before
    its run is set up (reset=True) and before each of its steps. Median step time after WARMUP steps. With
    `compile_`, each run compiles in its first steps and keeps its graphs: the swapped functions are guarded, so a
    call finds its own side's graph."""
    from nanochat.common import parse_config
    from nanochat.scripts.base_train import TrainConfig, setup, train_step
    from torch._dynamo.utils import counters
    torch._dynamo.config.recompile_limit = 64  # one Muon graph per (side, matrix shape): more than the default 8
    runs, times, losses = {}, {}, {}
    for label in labels:
        use(label, True)
        tag = f"il_{re.sub(r'[^A-Za-z0-9]+', '_', label)}_{depth}_{seq}"
        runs[label] = setup(parse_config(TrainConfig, train_flags(depth, seq, compile_, steps, tag, window)))
        times[label] = []
    order = list(labels)
    graphs = counters["stats"]["unique_graphs"]
    own_graphs = {}  # graphs each run compiled in its first step: none would mean it ran another run's graphs
    for step in range(steps):
        if step == WARMUP:
            graphs = counters["stats"]["unique_graphs"]  # compiled so far: each side's graphs, in its first steps
        for label in in_turn(order, step):
            use(label, False)
            before = counters["stats"]["unique_graphs"]
            t0 = time.perf_counter()
            losses[label] = train_step(runs[label])[0]
            times[label].append(time.perf_counter() - t0)
            runs[label].state.step += 1
            if step == 0:
                own_graphs[label] = counters["stats"]["unique_graphs"] - before
    out = {}
    for name, run in runs.items():
        timed = times[name][WARMUP:]
        tok_s = 8 * seq / statistics.median(timed)
        out[name] = dict(tok_s=tok_s, run=run, loss=losses[name], times=timed,
                         recompiled=counters["stats"]["unique_graphs"] - graphs,
                         shared_graphs=compile_ and own_graphs.get(name, 0) == 0)
    return out


def flop_ratio(side, depth, seq):
    """nanochat's matmul FLOPs per step over the project's: the model's (6N + attention, the same on both sides) plus
    each side's optimizer (Muon's orthogonalization; `count_step_flops`, one eager step of each). The speed-up the
    project would show if every matmul ran at the same speed on both sides and nothing else took any time: a row
    above it gains from what is not matmul (fewer passes) or from faster products (another library)"""
    from nanochat.common import parse_config
    from nanochat.scripts.base_train import TrainConfig, setup, train_step, count_step_flops
    total = {}
    for name in ("nanochat", "project"):
        side.use(name)
        run = setup(parse_config(TrainConfig, train_flags(depth, seq, False, 100, f"flops_{name}")))
        train_step(run)  # the first step times each product shape's library (00_common): not the step's own FLOPs
        total[name] = run.num_flops_per_token * 8 * seq + count_step_flops(run)["optimizer"]
    side.use("project")
    return total["nanochat"] / total["project"]


def speed_up(r):
    """The project's speed-up in a row: nanochat's median step over the project's, and in brackets the middle half
    (quartiles) of the step-by-step ratios of the steps the two took one after the other: how far to trust it"""
    ratios = [n / p for n, p in zip(r["nanochat"]["times"], r["project"]["times"])]
    low, _, high = statistics.quantiles(ratios, n=4)
    return f"{r['project']['tok_s'] / r['nanochat']['tok_s']:.2f}x ({low:.2f}-{high:.2f})"


def measure(depth, seq, compile_, steps, extra=()):
    "Median step time after warm-up of the real training loop: tokens/s, the run (MFU: `mfu(run, tok_s)`)"
    from nanochat.common import parse_config
    from nanochat.scripts.base_train import TrainConfig, train
    stamps = []
    flags = [*train_flags(depth, seq, compile_, steps, f"bench_d{depth}_{seq}_{int(compile_)}"), *extra]
    t0 = time.time()
    run = train(parse_config(TrainConfig, flags), on_step=lambda r: stamps.append(time.time()))
    dts = [b - a for a, b in zip(stamps[WARMUP:], stamps[WARMUP + 1:])]  # steady state: after the warm-up steps
    tok_s = 8 * seq / statistics.median(dts)
    return dict(tok_s=tok_s, wall=time.time() - t0, run=run, loss=run.state.smooth_train_loss)


def row_notes(r):
    """A row's note naming the runs whose training loss is not finite (their speed means nothing) or that compiled
    nothing of their own (they ran another run's graphs), and saying when something compiled during the timed steps
    (those steps include compile time), else ''"""
    bad = [name for name, m in r.items() if not torch.isfinite(torch.tensor(m["loss"]))]
    note = f" | NOT FINITE: the training loss of {', '.join(bad)} (row invalid)" if bad else ""
    shared = [name for name, m in r.items() if m.get("shared_graphs")]
    note += f" | {', '.join(shared)} compiled no graph of its own (row invalid)" if shared else ""
    recompiled = max(m.get("recompiled", 0) for m in r.values())
    return note + (f" | {recompiled} graph(s) compiled during the timed steps" if recompiled else "")


# the matmul operators the profiler names: which of their inputs are the two factors, and the operator itself
MATMULS = {"aten::mm": (slice(0, 2), torch.mm), "aten::bmm": (slice(0, 2), torch.bmm),
           "aten::addmm": (slice(1, 3), torch.addmm), "aten::addmm_": (slice(1, 3), torch.Tensor.addmm_),
           "aten::baddbmm": (slice(1, 3), torch.baddbmm),
           "mkldnn::_linear_pointwise": (slice(0, 2), lambda x, w: torch.ops.nanochat.onednn_linear(x, w))}


def matmul_factors(name, shapes):
    """The shapes of the two factors of a matmul operator call: addmm/baddbmm's product, not the input they add to;
    oneDNN's binary post-op form, (x, other, weight, bias, attr), without the `other` it multiplies the product by"""
    if name == "mkldnn::_linear_pointwise" and len(shapes) > 2 and len(shapes[2]) == 2:
        return shapes[0], shapes[2]
    return shapes[MATMULS[name][0]]


def matmul_flops(name, shapes):
    "FLOPs of one matmul operator call from its input shapes (addmm/baddbmm: the product, not the sum), else 0"
    if name not in MATMULS:
        return 0
    factors = matmul_factors(name, shapes)
    if len(factors) < 2 or len(factors[0]) < 2 or len(factors[1]) < 2:
        return 0
    a, b = factors
    n = b[-2] if name == "mkldnn::_linear_pointwise" else b[-1]  # oneDNN's weight is (out, in): x @ w.T
    return 2 * a[-2] * a[-1] * n * (a[0] if len(a) == 3 else 1)


def time_matmul_alone(name, shapes, dtype=torch.float32, reps=5, min_seconds=0.02):
    """Seconds per call of the same operator on fresh contiguous operands of the same shapes, in `dtype` (the step's:
    the profiler records shapes, not dtypes), median of `reps` loops"""
    factors, op = MATMULS[name]
    # oneDNN's call is timed on its two factors: its product, without a post-op
    operands = matmul_factors(name, shapes) if name == "mkldnn::_linear_pointwise" else shapes[:factors.stop]
    args = [torch.randn(s, dtype=dtype) for s in operands]
    t0 = time.perf_counter()
    op(*args)
    calls = max(1, int(min_seconds / max(time.perf_counter() - t0, 1e-6)))  # a loop long enough to time
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            op(*args)
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times)


def matmul_shape_table(run, steps=3, top=12):
    """The step's matmuls by operator and shape: calls, ms per step and GFLOP/s inside the step, next to the same
    operator on fresh contiguous operands of those shapes timed alone: how much of the peak a matmul keeps in context.
    In the step an operator's own time is counted (under the profiler), so a baddbmm's copy of its input, a separate
    operator, is left out there; alone, the whole call is timed"""
    from torch.profiler import profile, ProfilerActivity
    from nanochat.scripts.base_train import train_step
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(steps):
            train_step(run)
    agg = {}  # (op, shapes) -> [seconds, calls, flops]
    for e in prof.events():
        flops = matmul_flops(e.name, e.input_shapes)
        if flops:
            row = agg.setdefault((e.name, tuple(tuple(s) for s in e.input_shapes[:3])), [0.0, 0, 0])
            row[0] += e.self_cpu_time_total / 1e6 / steps
            row[1] += 1
            row[2] += flops / steps
    rows = sorted(agg.items(), key=lambda kv: -kv[1][0])
    total_s = sum(v[0] for v in agg.values())
    total_f = sum(v[2] for v in agg.values())
    lines = ["| operator | operand shapes | calls per step | ms per step | GFLOP/s in the step | GFLOP/s alone |",
             "|---|---|---|---|---|---|"]
    for (name, shapes), (sec, calls, flops) in rows[:top]:
        # FLOPs per call / seconds per call; a bf16 step's matmuls are all bf16 (Muon's too: the same probe decides)
        alone = flops / (calls / steps) / time_matmul_alone(name, shapes, run.train_dtype)
        dims = " x ".join(str(list(s)) for s in shapes if s)
        lines.append(f"| {name.removeprefix('aten::')} | {dims} | {calls // steps} | {1000 * sec:.1f} "
                     f"| {flops / sec / 1e9:.0f} | {alone / 1e9:.0f} |")
    lines.append(f"| all {len(agg)} shapes | | | {1000 * total_s:.1f} | {total_f / total_s / 1e9:.0f} | |")
    return "\n".join(lines)


def warm_run(depth, seq, tag):
    "A base_train run of an eager throughput row, set up and WARMUP steps in (the first steps of a process are slower)"
    from nanochat.common import parse_config
    from nanochat.scripts.base_train import TrainConfig, setup, train_step
    run = setup(parse_config(TrainConfig, train_flags(depth, seq, False, 100, tag)))
    for _ in range(WARMUP):
        train_step(run)  # the allocator and page faults of a fresh run
    return run


def profile_table(depth=4, seq=256, steps=3):
    "base_train's per-phase profile (profile_steps) of a d4 eager step, as markdown rows"
    from nanochat.scripts.base_train import profile_steps, count_step_flops, OP_KINDS
    run = warm_run(depth, seq, "prof")
    prof = profile_steps(run, steps)
    cols = OP_KINDS + ("Python & framework", "total")
    lines = ["| phase | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for phase, row in prof.items():
        lines.append(f"| {phase} | " + " | ".join(f"{row[c]:.1f}" for c in cols) + " |")
    total = sum(row["total"] for row in prof.values())
    shares = [f"{100 * sum(row[c] for row in prof.values()) / total:.0f}%" for c in cols]
    lines.append("| share of the step | " + " | ".join(shares) + " |")
    # MFU's ceiling: the model's FLOPs over all the matmul FLOPs the step does (Muon's too), see the training notebook
    flops = count_step_flops(run)
    mfu_flops = run.num_flops_per_token * 8 * seq
    matmul_s = sum(row["matmul"] for row in prof.values()) / 1000
    speed = sum(flops.values()) / matmul_s  # the profiled matmuls: the weights', the attention blocks', Muon's
    ceiling = mfu_flops / (mfu_flops + flops["optimizer"])
    peak, name = PEAKS[run.train_dtype], str(run.train_dtype).removeprefix("torch.")
    lines.append(f"\nmatmul FLOPs per step: model {flops['model'] / 1e9:.2f} G "
                 f"(+ {(mfu_flops - flops['model']) / 1e9:.2f} G attention), "
                 f"optimizer {flops['optimizer'] / 1e9:.2f} G | MFU ceiling (every FLOP at the peak): "
                 f"{100 * ceiling:.0f}% | the profiled matmuls ran at {speed / 1e9:.0f} GFLOP/s "
                 f"({100 * speed / peak:.0f}% of the {name} peak, {peak / 1e9:.0f} measured at start) "
                 f"| MFU of the profiled step: {100 * mfu_flops / (total / 1000) / peak:.0f}%")
    lines.append("\nThe step's matmuls by shape (the costliest), in the step and alone:\n")
    lines.append(matmul_shape_table(run, steps))
    return "\n".join(lines)


class OpTimer(TorchDispatchMode):
    """Wall-clock seconds of every operator call, by operator, timed around the call itself: no profiler. On some
    machines the profiler inflates single operators many-fold (on a 2-core AMX Xeon VM, in bf16, the fused loss's
    eight conversions of (512, 4096) chunks between bf16 and fp32 read 66 ms a step under it, 3.4 ms timed around each
    call), so this checks the profile's shares"""
    def __init__(self):
        super().__init__()
        self.seconds = collections.Counter()  # operator -> seconds
        self.calls = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        t0 = time.perf_counter()
        out = func(*args, **(kwargs or {}))  # the operators inside it are not seen: the mode is off in here
        name = func._schema.name  # e.g. 'aten::mm', the profiler's names
        self.seconds[name] += time.perf_counter() - t0
        self.calls[name] += 1
        return out


def op_times_table(depth=4, seq=256, steps=5, top=12):
    """A d4 eager step timed as it runs, then again with each operator timed by OpTimer: the matmul operators' share
    of the step (the profile's `matmul` kind: base_train's list) and the costliest operators, as markdown"""
    from nanochat.scripts.base_train import train_step, _MATMUL_OPS
    run = warm_run(depth, seq, "optimes")
    t0 = time.perf_counter()
    for _ in range(steps):
        train_step(run)
    plain = (time.perf_counter() - t0) / steps
    timer = OpTimer()
    t0 = time.perf_counter()
    with timer:
        for _ in range(steps):
            train_step(run)
    timed = (time.perf_counter() - t0) / steps
    ms = {name: 1000 * s / steps for name, s in timer.seconds.items()}
    matmul = sum(t for name, t in ms.items() if name in _MATMUL_OPS)
    dtype = str(run.train_dtype).removeprefix('torch.')
    lines = [f"training in {dtype}: {1000 * plain:.0f} ms a step as it runs, {1000 * timed:.0f} ms with every operator "
             f"timed; matmul operators {matmul:.0f} ms a step ({100 * matmul / (1000 * plain):.0f}% of the step as it "
             f"runs), all operators {sum(ms.values()):.0f} ms\n",
             "| operator | ms per step | calls per step |", "|---|---|---|"]
    for name, t in sorted(ms.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"| {name} | {t:.1f} | {timer.calls[name] / steps:.0f} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="d4 seq 256 eager only")
    p.add_argument("--steps", type=int, default=30, help="steps per throughput measurement (the first 10 untimed)")
    p.add_argument("--bpb-steps", type=int, default=200, help="steps of the val-bpb comparison (0: skip)")
    p.add_argument("--bpb-seeds", type=int, default=len(BPB_SEEDS), help="seeds of the val-bpb comparison (1: 42 only)")
    p.add_argument("--eval-tokens", type=int, default=262144)
    p.add_argument("--profile", action="store_true",
                   help="only the profile of a d4 step, every side: by phase, and its matmuls by shape")
    p.add_argument("--op-times", action="store_true",
                   help="only a d4 step's operators, each timed by the wall clock (no profiler), every side")
    p.add_argument("--bpb-only", action="store_true", help="only the val-bpb comparison")
    p.add_argument("--corpus", default=None, help="a directory of FineWeb-format shards (default: the offline corpus)")
    p.add_argument("--mode", choices=("all", "eager", "compiled"), default="all", help="which throughput rows")
    args = p.parse_args()
    if args.steps < WARMUP + 2:  # the quartiles of the timed steps need two of them
        p.error(f"--steps={args.steps}: at least {WARMUP + 2} (the first {WARMUP} are not timed)")
    if args.quick and args.mode == "compiled":
        p.error("--quick is the eager d4 row: use --mode compiled without --quick for the compiled rows")
    configs = [(4, 256, False)]  # the throughput rows: (depth, seq, compiled)
    if not args.quick:
        configs += [(4, 512, False), (6, 256, False), (6, 512, False), (4, 256, True), (6, 256, True), (4, 512, True),
                    (6, 512, True)]
    configs = [c for c in configs if args.mode == "all" or c[2] == (args.mode == "compiled")]
    if any(comp for _, _, comp in configs) and not (args.profile or args.op_times or args.bpb_only):
        check_inductor_cache()  # before any work: the compiled rows come last
    corpus = ensure_corpus(args.corpus)
    base = tempfile.mkdtemp(prefix="bench_train_")
    atexit.register(shutil.rmtree, base, ignore_errors=True)  # its tokenizer and checkpoints go when the bench ends
    os.environ.update(NANOCHAT_BASE_DIR=base, NANOCHAT_DATA_DIR=corpus)
    ensure_tokenizer(base, corpus)
    machine_report()
    side = Side()
    if args.profile or args.op_times:
        for label, (name, dtype) in variants().items():  # and the project in fp32 where it trains in bf16
            side.use(name, dtype=dtype)
            table = profile_table() if args.profile else op_times_table()  # the run's own lines come first
            what = "ms per step\n\n" if args.profile else ""  # op_times_table's first line says what it times
            print(f"\nd4, seq 256, batch 8, eager, {label}{' structure' if name == 'nanochat' else ''}: {what}{table}")
        side.use("project")
        return
    if args.bpb_only:
        return compare_bpb(side, args.bpb_steps, args.eval_tokens, bpb_seeds(args.bpb_seeds))
    measure(4, 256, False, WARMUP + 2, extra=["--model-tag=warmup"])  # the process's own first-run costs, untimed
    rows = []
    ratios = {}  # (depth, seq) -> the matmul FLOP ratio, the same for the eager and the compiled row
    for depth, seq, comp in configs:
        if (depth, seq) not in ratios:
            ratios[depth, seq] = flop_ratio(side, depth, seq)
        labels = variants()

        def use(label, reset):
            side.use(labels[label][0], reset=reset, dtype=labels[label][1])
        r = measure_interleaved(use, labels, depth, seq, args.steps, compile_=comp)
        side.use("project")
        rows.append((depth, seq, comp, r))
        n, q = r["nanochat"], r["project"]
        f32 = (f" | project fp32 {r['project fp32']['tok_s']:7,.0f} tok/s (MFU {mfu_text(r['project fp32'], seq)})"
               if "project fp32" in r else "")
        print(f"d{depth} seq {seq} {'compiled' if comp else 'eager':8s}: nanochat {n['tok_s']:7,.0f} tok/s "
              f"(MFU {mfu_text(n, seq)}) | project {q['tok_s']:7,.0f} tok/s (MFU {mfu_text(q, seq)}) "
              f"| {speed_up(r)} (FLOP ratio {ratios[depth, seq]:.2f}x){f32}{row_notes(r)}", flush=True)
        for dtype, peak in measure_peaks().items():  # re-measured after every row (see PEAKS)
            PEAKS[dtype] = max(PEAKS[dtype], peak)
    print("\nMFU against the highest matmul peak measured in this run in the dtype each side trains in: "
          + ", ".join(f"{str(d).removeprefix('torch.')} {p / 1e9:.0f} GFLOP/s" for d, p in PEAKS.items()))
    dtypes = {name: str(r["run"].train_dtype).removeprefix("torch.") for name, r in rows[0][3].items()}
    print(f"(nanochat trains in {dtypes['nanochat']} on a CPU; the project here in {dtypes['project']})")
    timed = library_report()
    if timed:
        print(timed)
    print("\n(speed-up: the medians' ratio, in brackets the quartiles of the step-by-step ratios; FLOP ratio: "
          "nanochat's matmul FLOPs per step over the project's, the speed-up if every matmul ran at one speed and "
          "nothing else took time; MFU: the median step's, in brackets the quartiles of the steps' MFUs)")
    print("\n| model | seq | mode | nanochat structure tok/s | project tok/s | speed-up | FLOP ratio | MFU nanochat "
          "| MFU project | project in fp32: tok/s, speed-up, MFU (fp32 peak) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for depth, seq, comp, r in rows:
        n, q = r["nanochat"], r["project"]
        f32 = (f"{r['project fp32']['tok_s']:,.0f}, {r['project fp32']['tok_s'] / n['tok_s']:.2f}x, "
               f"{mfu_text(r['project fp32'], seq)}"
               if "project fp32" in r else "(not run)" if torch.bfloat16 in PEAKS else "(the same run)")
        print(f"| d{depth} | {seq} | {'compiled' if comp else 'eager'} | {n['tok_s']:,.0f} | {q['tok_s']:,.0f} "
              f"| {speed_up(r)} | {ratios[depth, seq]:.2f}x | {mfu_text(n, seq)} | {mfu_text(q, seq)} | {f32} |"
              + row_notes(r))
    if args.quick or args.bpb_steps <= 0:
        return
    compare_bpb(side, args.bpb_steps, args.eval_tokens, bpb_seeds(args.bpb_seeds))


@contextlib.contextmanager
def init_seed(seed):
    """Runs set up inside start from `seed` instead of compute_init's 42 (nanochat's base_train has no seed flag): the
    model's init changes, the data and its order do not"""
    import nanochat.common as common
    real = common.compute_init

    def seeded(*args, **kwargs):
        out = real(*args, **kwargs)
        torch.manual_seed(seed)
        return out
    common.compute_init = seeded
    try:
        yield
    finally:
        common.compute_init = real


def bpb_seeds(n):
    "The first `n` seeds: BPB_SEEDS, then 3, 4, ..."
    return (BPB_SEEDS + tuple(range(3, 3 + n)))[:n]


def compare_bpb(side, steps, eval_tokens, seeds=BPB_SEEDS):
    """Val bpb after `steps` steps of d4 (seq 256, eager) from each seed of `seeds`: nanochat's structure, then the
    project, on the same data. One seed is not enough: rounding-level changes (the order of a sum) move one run's bpb
    by a few tenths of a percent, as much as the goal's 0.5%, so the goal is read off the mean over the seeds"""
    # the project in the dtype it trains in here and, where that is bf16, in fp32 too: the fp32 baseline of the goal
    bpbs = {}
    for seed in seeds:
        for name, dtype in variants().values():
            side.use(name, dtype=dtype)
            t0 = time.time()
            extra = [f"--eval-every={steps}", f"--eval-tokens={eval_tokens}", f"--model-tag=bpb_{name}_{seed}"]
            with init_seed(seed):
                r = measure(4, 256, False, steps, extra=extra)
            label = f"{name} ({str(r['run'].train_dtype).removeprefix('torch.')})"
            bpbs.setdefault(label, []).append((r["run"].state.val_bpb, r["tok_s"], time.time() - t0))
    side.use("project")
    print(f"\nval bpb after {steps} steps (d4, seq 256, eager, same data; seeds {', '.join(map(str, seeds))}; goal: "
          f"the mean within 0.5% of the fp32 runs'):")
    base = next(iter(bpbs.values()))
    base_mean = statistics.mean(b for b, _, _ in base)
    for label, runs in bpbs.items():
        mean = statistics.mean(b for b, _, _ in runs)
        per_seed = ", ".join(f"{b:.4f} ({100 * (b / b0 - 1):+.2f}%)" for (b, _, _), (b0, _, _) in zip(runs, base))
        speed = statistics.mean(t / t0 for (_, t, _), (_, t0, _) in zip(runs, base))
        wall = sum(w for _, _, w in runs)
        print(f"  {label:20s} mean {mean:.4f}: {100 * (mean / base_mean - 1):+.3f}% vs nanochat, {speed:.2f}x its "
              f"tokens/s ({wall:.0f}s) | per seed: {per_seed}")


if __name__ == "__main__":
    main()
