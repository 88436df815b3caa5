"""SDPA's kernel choice on a GPU without FA3: PyTorch's (cuDNN first on Hopper) next to this project's, in one run.

    python bench/bench_sdpa_cuda.py                 # on a CUDA device (made for an H100/H200 without FA3)
    python bench/bench_sdpa_cuda.py --device cpu    # a smoke run of the same code on the CPU (no cuDNN there)

cuDNN's attention kernel builds an execution plan for every new shape before it runs (see the attention notebook,
"cuDNN plans on a Hopper GPU"). The project's fallback (`flash_attention._sdpa_kernels`) keeps cuDNN for the first
`CUDNN_SHAPES_MAX` shapes of a process and for none of the KV-cache calls; the other shapes go to the flash,
memory-efficient or math kernels, which need no plan. Three tables, bf16 on CUDA (fp32 on the CPU):
1. Eager KV-cache decoding of a small model (2 layers, 2 heads of 64): 8 prompts of 40-61 tokens, 48 new tokens each,
   ms per token the first time these cache lengths come up and again with the same lengths. "PyTorch's choice" runs
   `flash_attn_with_kvcache` with `_sdpa_kernels` replaced by a no-op (SDPA as nanochat's fallback calls it).
2. Attention forward+backward at fixed training shapes: PyTorch's choice against the kernels without cuDNN.
3. Forward+backward over 40 batches of new widths (8 rows, 100-1024 tokens, 6 heads of 128), as SFT's padded batches
   or CORE's prompts give: without cuDNN, the project's rule, PyTorch's choice. Each variant gets its own widths, so
   no variant reuses plans another one built.
The plan cache is per process and PyTorch keeps it: run this in a fresh process. Not a test: it prints tables.
"""
import argparse
import contextlib
import random
import time

import torch
from torch.nn.attention import sdpa_kernel

import nanochat.flash_attention as fa
from nanochat.common import autocast_ctx
from nanochat.engine import KVCache
from nanochat.gpt import GPT, GPTConfig


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


@contextlib.contextmanager
def pytorch_choice():
    "The project's fallback with SDPA's kernel left to PyTorch, as nanochat's fallback calls it"
    saved = fa._sdpa_kernels
    fa._sdpa_kernels = lambda q, k, changing=False: contextlib.nullcontext()
    try:
        yield
    finally:
        fa._sdpa_kernels = saved


def planless():
    "SDPA without cuDNN: the flash, memory-efficient or math kernels, which need no plan"
    return sdpa_kernel(fa._PLANLESS)


def decode_ms_per_token(model, device, dtype, problems=8, new_tokens=48):
    "Eager KV-cache decoding: ms per token over `problems` prompts of 40, 43, ... tokens (argmax, read on the host)"
    cfg = model.config
    sync(device)
    t0 = time.perf_counter()
    with torch.no_grad(), autocast_ctx(device):
        for p in range(problems):
            L = 40 + 3 * p
            cache = KVCache(1, cfg.n_kv_head, L + new_tokens, cfg.n_embd // cfg.n_head, cfg.n_layer, device=device,
                            dtype=dtype)
            logits = model(torch.randint(0, cfg.vocab_size, (1, L), device=device), kv_cache=cache)
            for _ in range(new_tokens):
                token = logits[:, -1].argmax(-1, keepdim=True)
                token.item()  # the engine reads every token on the host
                logits = model(token, kv_cache=cache)
    sync(device)
    return 1e3 * (time.perf_counter() - t0) / (problems * (new_tokens + 1))


def attention_fwd_bwd(B, T, H, D, device, dtype):
    q, k, v = (torch.randn(B, T, H, D, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    fa.flash_attn_func(q, k, v, causal=True).sum().backward()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cuda, or cpu for a smoke run")
    p.add_argument("--reps", type=int, default=10, help="timed calls per fixed-shape row")
    args = p.parse_args()
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_sdpa_cuda: no CUDA device here (use --device cpu for a smoke run of the code)")
    fa.set_backend("sdpa")  # the fallback is what this measures, FA3 or not
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    small = device == "cpu"  # the CPU smoke run: small shapes, same code
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    cudnn = torch.backends.cudnn.version() if device == "cuda" else None
    print(f"{name} | torch {torch.__version__} | cuDNN {cudnn} | {dtype} | CUDNN_SHAPES_MAX {fa.CUDNN_SHAPES_MAX}")

    cfg = GPTConfig(sequence_len=128, vocab_size=512, n_layer=2, n_head=2, n_kv_head=2, n_embd=128, window_pattern="L")
    with torch.device("meta"):
        model = GPT(cfg)
    model.to_empty(device=device)
    torch.manual_seed(0)
    model.init_weights()
    model.eval()
    decode_ms_per_token(model, device, dtype, problems=1, new_tokens=4)  # CUDA context, cuBLAS: not in the rows
    print("\n| decoding (ms per token) | first time these lengths | again |\n|---|---|---|")
    for label, ctx in (("project (no cuDNN for the cache)", contextlib.nullcontext), ("PyTorch's choice", pytorch_choice)):
        with ctx():  # the project first: it builds no cuDNN plan the other variant could reuse
            first = decode_ms_per_token(model, device, dtype)
            again = decode_ms_per_token(model, device, dtype)
        print(f"| {label} | {first:.2f} | {again:.2f} |")

    print("\n| attention fwd+bwd, fixed shape (B, T, heads, head_dim) | PyTorch's choice (ms) | without cuDNN (ms) |"
          "\n|---|---|---|")
    shapes = [(2, 128, 4, 64)] if small else [(32, 2048, 10, 128), (16, 2048, 6, 128), (8, 512, 4, 64)]
    for shape in shapes:
        row = []
        for ctx in (pytorch_choice, planless):
            with ctx():
                for _ in range(2):
                    attention_fwd_bwd(*shape, device, dtype)  # plans built, kernels loaded
                sync(device)
                t0 = time.perf_counter()
                for _ in range(args.reps):
                    attention_fwd_bwd(*shape, device, dtype)
                sync(device)
            row.append(1e3 * (time.perf_counter() - t0) / args.reps)
        print(f"| {shape} | {row[0]:.2f} | {row[1]:.2f} |")

    print("\n| 40 batches of new widths, fwd+bwd | seconds |\n|---|---|")
    rng = random.Random(0)
    lo, hi, B, H, D = (16, 256, 2, 2, 32) if small else (100, 1024, 8, 6, 128)
    seen = set()
    assert hi - lo + 1 >= 3 * 40, "the widths range must hold 40 new widths for each variant"
    for label, ctx in (("without cuDNN", planless), ("project's rule", contextlib.nullcontext),
                       ("PyTorch's choice", pytorch_choice)):
        widths = []
        while len(widths) < 40:  # widths no earlier variant used: every variant starts without plans
            w = rng.randint(lo, hi)
            if w not in seen:
                seen.add(w)
                widths.append(w)
        fa._cudnn_shapes.clear()  # the project's rule counts from this row's first shape
        with ctx():
            sync(device)
            t0 = time.perf_counter()
            for w in widths:
                attention_fwd_bwd(B, w, H, D, device, dtype)
            sync(device)
        print(f"| {label} | {time.perf_counter() - t0:.2f} |")


if __name__ == "__main__":
    main()
