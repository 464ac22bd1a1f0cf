"""Benchmark: from `python3 bootstrap.py lab` (already installed) to lesson 1 open in a browser.

Run from the project root (needs Debian's chromium and playwright, like the browser tests):

    python3 bootstrap.py python bench/lab_startup.py [--rounds 3]

Each round, interleaved, times two ways to the same page, from the command's start until
lesson 1's rendered markdown is visible in headless Chromium:

- ``bootstrap``: ``python3 bootstrap.py lab`` (its environment check, the venv's PATH, and
  the JupyterLab command it builds), then the address it opens (the server's root, which
  redirects to lesson 1);
- ``jupyterlab``: plain ``python -m jupyterlab`` on the same folder, then lesson 1's address.

It prints the minimum and median of each and their ratio (what bootstrap adds on top of
JupyterLab's own start). Both servers run as the same user with a private HOME.
"""
from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bootstrap  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]
LESSON = bootstrap.FIRST_LESSON


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def private_env(home: Path) -> dict:
    env = dict(os.environ)
    env.update({
        "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "IPYTHONDIR": str(home / "ipython"),
    })
    return env


def server_flags(port: int, token: str) -> list[str]:
    return ["--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}"]


def wait_until_answering(base: str, token: str, process: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).close()
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.05)
    raise RuntimeError("the server did not answer in time")


def time_to_lesson(browser, command: list[str], address: str, base: str, token: str, env: dict) -> float:
    """Seconds from starting `command` until lesson 1 is rendered at `address`."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        wait_until_answering(base, token, process, time.monotonic() + 180)
        page = context.new_page()
        page.goto(address)
        page.locator(".jp-NotebookPanel .jp-RenderedMarkdown").first.wait_for(timeout=180_000)
        if LESSON not in page.url:
            raise RuntimeError(f"{address} opened {page.url}, not {LESSON}")
        return time.perf_counter() - started
    finally:
        context.close()
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("skipped: the playwright package is not installed")
        return 0
    if not os.access(CHROMIUM, os.X_OK):
        print(f"skipped: no chromium at {CHROMIUM}")
        return 0
    root_flag = ["--allow-root"] if bootstrap.running_as_root() else []
    times: dict[str, list[float]] = {"bootstrap": [], "jupyterlab": []}
    with sync_playwright() as playwright, tempfile.TemporaryDirectory(prefix="bench-lab-") as scratch:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for round_number in range(args.rounds):
                for name in times:
                    home = Path(scratch) / f"{name}-{round_number}"
                    port, token = free_port(), secrets.token_hex(8)
                    base = f"http://127.0.0.1:{port}"
                    if name == "bootstrap":
                        command = [sys.executable, str(ROOT / "bootstrap.py"), "lab", *server_flags(port, token)]
                        address = f"{base}/?token={token}"
                    else:
                        command = [str(bootstrap.BIN / "python"), "-m", "jupyterlab", *server_flags(port, token),
                                   f"--ServerApp.root_dir={ROOT}", *root_flag]
                        address = f"{base}/lab/tree/{LESSON}?token={token}"
                    seconds = time_to_lesson(browser, command, address, base, token, private_env(home))
                    times[name].append(seconds)
                    print(f"round {round_number + 1} {name:<10} {seconds:6.2f} s", flush=True)
        finally:
            browser.close()
    print()
    for name, values in times.items():
        print(f"{name:<10} min {min(values):6.2f} s   median {statistics.median(values):6.2f} s")
    ratio = statistics.median(times["bootstrap"]) / statistics.median(times["jupyterlab"])
    print(f"ratio bootstrap / jupyterlab (medians): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
