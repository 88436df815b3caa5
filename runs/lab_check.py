"""What a learner does first: open a notebook in JupyterLab, Restart Kernel and Run All Cells, and look.

Starts `jupyter lab` on a free 127.0.0.1 port over a temp copy of the notebook (so the checkout stays clean), drives
it in headless Chromium (Playwright with the system's Chromium; no network), clicks Kernel > Restart Kernel and Run
All Cells, waits for the kernel to go idle, saves, and checks: every code cell ran, no cell raised, the figures are
there and render, and the widget displays. A screenshot goes to _docs_shots/lab_<notebook>.png.

    python runs/lab_check.py                    # nbs/12_engine.ipynb
    python runs/lab_check.py --nb 10_report     # another notebook
Exit code 0 when every check passes, 1 otherwise, 3 with a SKIPPED line when no Chromium/Playwright is installed.
"""
import argparse, json, os, shutil, socket, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def free_port():
    with socket.socket() as s: s.bind(("127.0.0.1", 0)); return s.getsockname()[1]

def kernel_ready(port, nb_name):
    "The server's view: the notebook's session has a kernel that is idle and has the page's websocket connected."
    try: sessions = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/sessions", timeout=5).read())
    except Exception: return False
    kernels = [s["kernel"] for s in sessions if s.get("path") == nb_name and s.get("kernel")]
    return len(kernels) == 1 and kernels[0].get("execution_state") == "idle" and kernels[0].get("connections", 0) >= 1

def wait_http(url, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try: urllib.request.urlopen(url, timeout=2); return True
        except Exception: time.sleep(0.3)
    return False

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nb", default="12_engine", help="notebook stem in nbs/")
    p.add_argument("--timeout", type=int, default=600, help="seconds to wait for Run All to finish")
    p.add_argument("--no-widget", action="store_true", help="the notebook has no widget to check")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from nanochat.testing import find_chromium, CHROMIUM_ARGS
    try: from playwright.sync_api import sync_playwright
    except ImportError: print("SKIPPED lab check: playwright is not installed"); return 3
    chromium = find_chromium()
    if chromium is None: print("SKIPPED lab check: no chromium on PATH (apt-get install chromium)"); return 3
    work = Path(tempfile.mkdtemp(prefix="lab_check_"))
    nb_name = f"{args.nb}.ipynb"
    shutil.copy(ROOT / "nbs" / nb_name, work / nb_name)
    port = free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(work / ".jupyter"), "JUPYTER_RUNTIME_DIR": str(work / ".runtime")}
    lab = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                            "--ServerApp.token=", "--ServerApp.password=", "--allow-root", f"--ServerApp.root_dir={work}",
                            "--LabApp.news_url=", "--ServerApp.disable_check_xsrf=True"],
                           stdout=subprocess.DEVNULL, stderr=open(work / "lab.log", "w"), env=env, cwd=work)
    errors, page_errors = [], []
    shot = ROOT / "_docs_shots" / f"lab_{args.nb}.png"
    shot.parent.mkdir(exist_ok=True)
    try:
        if not wait_http(f"http://127.0.0.1:{port}/api/status"): raise RuntimeError("jupyter lab did not start")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            benign = ("Canceled future for kernel_info_request",)  # JupyterLab's own note when a kernel restarts
            page.on("pageerror", lambda e: None if str(e).startswith(benign) else page_errors.append(str(e)))
            page.goto(f"http://127.0.0.1:{port}/lab/tree/{nb_name}")
            page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=60_000)
            # Wait until the kernel is really up before restarting it. The cells render (and the toolbar's execution
            # indicator reads 'idle') before JupyterLab has even asked for a kernel; Restart clicked then finds no
            # kernel, fails ("No kernel to restart"), and JupyterLab shows a Select Kernel dialog instead. Clicked
            # while the first kernel websocket is still connecting, the restart races the reconnect (the server then
            # logs struct.error on the socket it is replacing). So: the status bar says "<kernel> | Idle" (a kernel,
            # connected, idle) and the server agrees (idle, the page's websocket connected).
            page.wait_for_function("""() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
                .some(e => /^(?!No Kernel).+\\| Idle$/.test(e.textContent.trim()))""", timeout=120_000)
            t_ready = time.time()
            while not kernel_ready(port, nb_name):
                if time.time() - t_ready > 60: raise RuntimeError("the page shows an idle kernel but the server does not")
                time.sleep(0.5)
            time.sleep(1)  # let the client finish its own start-up requests (kernel_info, comm_info) on the socket
            t0 = time.time()
            page.click(".lm-MenuBar-itemLabel:text-is('Kernel')")
            page.click(".lm-Menu-itemLabel:text-is('Restart Kernel and Run All Cells…')")
            dialog = page.wait_for_selector(".jp-Dialog", timeout=30_000).inner_text()
            if not dialog.startswith("Restart Kernel?"):  # never accept some other dialog (e.g. Select Kernel) blindly
                raise RuntimeError(f"expected the Restart Kernel? dialog, got: {dialog[:200]!r}")
            page.click(".jp-Dialog-button.jp-mod-accept")
            # done: the kernel is idle and every cell has run, or a cell raised (Run All stops at the first error)
            done = """() => { const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
                const idle = document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle';
                const failed = document.querySelector('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"] .ansi-red-fg, .jp-OutputArea-output .ansi-red-intense-fg');
                return idle && p.length > 0 && (p.every(e => /\\[\\d+\\]/.test(e.textContent)) || failed !== null); }"""
            try: page.wait_for_function(done, timeout=args.timeout * 1000, polling=1000)
            except Exception:
                page.screenshot(path=str(shot))
                print("state:", page.eval_on_selector_all(".jp-Notebook .jp-CodeCell .jp-InputPrompt", "els => els.map(e => e.textContent)"),
                      page.eval_on_selector_all(".jp-Notebook-ExecutionIndicator", "els => els.map(e => e.dataset.status)"))
                raise
            print(f"Run All: {time.time() - t0:.0f}s")
            page.keyboard.press("Control+s")
            time.sleep(2)
            images = page.eval_on_selector_all(".jp-OutputArea-output img", "els => els.map(e => e.complete && e.naturalWidth > 0)")
            widgets = page.eval_on_selector_all(".jp-OutputArea-output .widget-slider, .jp-OutputArea-output .jupyter-widgets",
                                                "els => els.length")
            page.screenshot(path=str(shot))
            browser.close()
        saved = json.loads((work / nb_name).read_text())
        code = [c for c in saved["cells"] if c["cell_type"] == "code"]
        not_run = [i for i, c in enumerate(code) if c.get("execution_count") is None]
        failed = [o.get("ename", "") + ": " + o.get("evalue", "") for c in code for o in c.get("outputs", []) if o["output_type"] == "error"]
        pngs = sum("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", []))
        print(f"saved notebook: {len(code)} code cells, {len(not_run)} not run, {len(failed)} errors, {pngs} figures; "
              f"in the page: {len(images)} images ({sum(images)} loaded), {widgets} widget elements")
        if not_run: errors.append(f"code cells that did not run: {not_run}")
        if failed: errors.append(f"cells raised: {failed}")
        if not images or not all(images): errors.append("figures missing or not rendered")
        if widgets == 0 and not args.no_widget: errors.append("no widget displayed")
        if page_errors: errors.append(f"JavaScript errors: {page_errors[:3]}")
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}")
    finally:
        lab.terminate()
        try: lab.wait(10)
        except subprocess.TimeoutExpired: lab.kill()
    if errors:
        if page_errors and not any(e.startswith("JavaScript errors") for e in errors):
            errors.append(f"JavaScript errors: {page_errors[:3]}")
        log = (work / "lab.log").read_text(errors="replace").splitlines()
        print("jupyter log (last 40 lines):\n    " + "\n    ".join(log[-40:]))
        print("LAB CHECK FAILED:\n  " + "\n  ".join(errors) + f"\n  (jupyter log: {work / 'lab.log'}; screenshot: {shot})")
        return 1
    print(f"lab check passed; screenshot: {shot}")
    shutil.rmtree(work, ignore_errors=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
