"""Web chat server throughput and latency on loopback: short completions from concurrent clients.

    python bench/bench_chat_web.py                          # 4 clients x 25 requests of 16 tokens, plus baselines
    python bench/bench_chat_web.py --clients 8 --max-tokens 64 --requests 10
    python bench/bench_chat_web.py --memory 1500              # the server's memory over 1,500 prompts of new lengths

The server is the real one (`python -m nanochat.scripts.chat_web`, one CPU worker) in a subprocess, serving the
tiny hand-set "babbler" model (`nanochat.testing.save_babbler_checkpoint`: d1, n_embd 32, byte tokenizer), which
never ends its turn, so every completion is exactly --max-tokens tokens. Each client thread keeps one HTTP
connection and sends its requests back to back; latency is measured from sending the request to reading the last
event.

Baselines measured in the same run:
* engine: the same model generating the same completions in this process with `Engine.generate` (no HTTP, no
  threads): the ceiling for one worker. "server / engine" shows what the web layer costs.
* 1 client: the server with no concurrency (nothing queued).
The table also gives time to first token and how long `/health` takes while the worker is busy (the event loop
must stay free while a reply is generated).

`--memory N` measures instead the server's resident memory (Linux) over N requests whose prompts each have a random
length (1-400 bytes), one after the other, with a babbler as wide as the main job's model (4 layers, n_embd 256): its
products are large enough for oneDNN, which builds and keeps a kernel for every new product shape. The baseline, run
the same way: a server with oneDNN's default kernel caches (1,024 kernels each) instead of the cap that
`nanochat.common` sets at import (`ONEDNN_CACHE_CAPACITY`, 00_common).
"""
import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from unittest import mock

import torch

from nanochat.checkpoint_manager import load_model
from nanochat.engine import Engine
from nanochat.scripts.chat_web import render_prompt, ChatMessage
from nanochat.testing import save_babbler_checkpoint


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def start_server(base_dir, port, max_tokens, extra_env=None):
    env = {**os.environ, 'NANOCHAT_BASE_DIR': base_dir, 'OMP_NUM_THREADS': '1', **(extra_env or {})}
    log = open(os.path.join(base_dir, 'server.log'), 'w')
    proc = subprocess.Popen([sys.executable, '-m', 'nanochat.scripts.chat_web', f'--port={port}', '--device-type=cpu',
                             f'--max-tokens={max_tokens}'], env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None: break
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{port}/health', timeout=2) as r:
                if json.load(r)['ready']: return proc
        except OSError: pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError('the server did not start:\n' + open(log.name).read())


def one_request(conn, body):
    "POST a completion on an open connection; (latency, time to first token, tokens) in seconds"
    t0 = time.perf_counter()
    conn.request('POST', '/chat/completions', body=body, headers={'Content-Type': 'application/json'})
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read())
    first, tokens = None, 0
    for line in r:  # one SSE line at a time
        if not line.startswith(b'data: '): continue
        event = json.loads(line[6:])
        if 'token' in event:
            tokens += 1
            if first is None: first = time.perf_counter() - t0
        elif 'error' in event: raise RuntimeError(event['error'])
    return time.perf_counter() - t0, first, tokens


def run_clients(port, clients, requests, max_tokens, probe_health=False):
    "Each client sends `requests` completions back to back; returns (wall seconds, per-request results, health latencies)"
    results, lock, stop = [], threading.Lock(), threading.Event()
    def client(i):
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
        for j in range(requests):
            body = json.dumps({'messages': [{'role': 'user', 'content': f'client {i} request {j}'}], 'max_tokens': max_tokens})
            out = one_request(conn, body)
            with lock: results.append(out)
        conn.close()
    health = []
    def prober():
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
        while not stop.is_set():
            t0 = time.perf_counter()
            conn.request('GET', '/health'); conn.getresponse().read()
            health.append(time.perf_counter() - t0)
            time.sleep(0.02)
        conn.close()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    probe = threading.Thread(target=prober) if probe_health else None
    t0 = time.perf_counter()
    for t in threads: t.start()
    if probe: probe.start()
    for t in threads: t.join()
    wall = time.perf_counter() - t0
    stop.set()
    if probe: probe.join()
    return wall, results, health


def engine_baseline(base_dir, n, max_tokens):
    "The same completions generated in-process with Engine.generate: seconds per completion"
    with mock.patch.dict(os.environ, {'NANOCHAT_BASE_DIR': base_dir}):
        model, tokenizer, _ = load_model('sft', torch.device('cpu'), phase='eval')
    engine = Engine(model, tokenizer)
    times = []
    for j in range(n):
        tokens = render_prompt(tokenizer, [ChatMessage(role='user', content=f'client 0 request {j}')])
        t0 = time.perf_counter()
        count = sum(1 for _ in engine.generate(tokens, num_samples=1, max_tokens=max_tokens, temperature=0.8, top_k=50, seed=j))
        times.append(time.perf_counter() - t0)
        assert count == max_tokens, count
    return times


def server_rss(proc):
    "The server's resident memory now and at its peak, MB (Linux: /proc)"
    fields = dict(line.split(':', 1) for line in open(f'/proc/{proc.pid}/status') if ':' in line)
    return tuple(int(fields[k].split()[0]) / 1024 for k in ('VmRSS', 'VmHWM'))


def memory_run(base_dir, requests, max_tokens, extra_env=None):
    "The server's (requests so far, RSS, peak RSS) after each fifth of `requests` completions, prompts of random lengths"
    port = free_port()
    proc = start_server(base_dir, port, max_tokens, extra_env)
    rng = random.Random(0)  # the same prompts in every run
    marks = [(0, *server_rss(proc))]
    try:
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
        for j in range(1, requests + 1):
            content = 'a' + ''.join(rng.choice('abcdefghij ') for _ in range(rng.randint(0, 399)))  # never blank
            one_request(conn, json.dumps({'messages': [{'role': 'user', 'content': content}], 'max_tokens': max_tokens}))
            if j % max(1, requests // 5) == 0:
                marks.append((j, *server_rss(proc)))
        conn.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return marks


def memory_table(requests, max_tokens):
    "The server's memory with the shipped kernel-cache cap and with oneDNN's default, as a markdown table"
    from nanochat.common import ONEDNN_CACHE_CAPACITY
    if not os.path.exists('/proc/self/status'):
        raise SystemExit('--memory reads /proc/<pid>/status: Linux only')
    default = {'ONEDNN_PRIMITIVE_CACHE_CAPACITY': '1024', 'LRU_CACHE_CAPACITY': '1024'}  # oneDNN's and ideep's own
    with tempfile.TemporaryDirectory() as base_dir:
        save_babbler_checkpoint(base_dir, n_layer=4, n_embd=256)
        capped = memory_run(base_dir, requests, max_tokens)
        uncapped = memory_run(base_dir, requests, max_tokens, default)
    lines = [f"server memory (MB), prompts of 1-400 bytes, {max_tokens}-token replies, a 4-layer babbler of width 256\n",
             f"| requests | kernel caches {ONEDNN_CACHE_CAPACITY} (shipped): RSS | peak | oneDNN's default 1,024 "
             f"(baseline): RSS | peak |", "|---|---|---|---|---|"]
    for (j, rss, peak), (_, rss0, peak0) in zip(capped, uncapped):
        lines.append(f"| {j:,} | {rss:,.0f} | {peak:,.0f} | {rss0:,.0f} | {peak0:,.0f} |")
    return "\n".join(lines)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--clients', type=int, default=4)
    p.add_argument('--requests', type=int, default=25, help='requests per client')
    p.add_argument('--max-tokens', type=int, default=16)
    p.add_argument('--threads', type=int, default=1, help='torch threads for the in-process engine baseline')
    p.add_argument('--memory', type=int, default=0, metavar='N',
                   help="instead: the server's memory over N prompts of random lengths, against oneDNN's default caches")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} CPUs; torch {torch.__version__}")
    if args.memory:
        print(memory_table(args.memory, args.max_tokens))
        return

    with tempfile.TemporaryDirectory() as base_dir:
        save_babbler_checkpoint(base_dir)
        base = engine_baseline(base_dir, args.requests, args.max_tokens)
        port = free_port()
        proc = start_server(base_dir, port, args.max_tokens)
        try:
            run_clients(port, 1, 3, args.max_tokens)  # warm up
            single = run_clients(port, 1, args.requests, args.max_tokens)
            multi = run_clients(port, args.clients, args.requests, args.max_tokens, probe_health=True)
        finally:
            proc.terminate()
            proc.wait(10)

    rows = []
    engine_rps = 1 / statistics.median(base)
    rows.append(('engine, in-process (baseline)', engine_rps, statistics.median(base), pct(base, 95), None, None))
    for name, (wall, res, health) in [('server, 1 client', single), (f'server, {args.clients} clients', multi)]:
        lat = [r[0] for r in res]
        ttft = [r[1] for r in res]
        assert all(r[2] == args.max_tokens for r in res), 'every completion should have max_tokens tokens'
        rows.append((name, len(res) / wall, statistics.median(lat), pct(lat, 95), statistics.median(ttft),
                     (statistics.median(health), max(health)) if health else None))
    print(f"\n{args.max_tokens}-token completions, babbler model (d1, n_embd 32) on one CPU worker, "
          f"{args.requests} requests per client\n")
    print(f"{'':34s} {'req/s':>7s} {'p50 ms':>8s} {'p95 ms':>8s} {'TTFT p50':>9s} {'vs engine':>10s}  /health while busy")
    for name, rps, p50, p95, ttft, health in rows:
        h = f"p50 {health[0] * 1000:.1f} ms, max {health[1] * 1000:.1f} ms" if health else ''
        t = f"{ttft * 1000:8.1f}ms" if ttft is not None else f"{'':9s}"
        print(f"{name:34s} {rps:7.1f} {p50 * 1000:8.1f} {p95 * 1000:8.1f} {t} {rps / engine_rps:9.2f}x  {h}")


if __name__ == '__main__':
    main()
