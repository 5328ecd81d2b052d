"""What the benchmarks share: child processes run from the checkout, the app in a tmux pane, an alert
receiver, and the results table.

Each measurement that must not share memory or imports with the bench runs in a child process that prints one
``RESULT {json}`` line; the app under test runs in a private tmux server; every bench prints one table of values,
each beside its target.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil

from tools.tmux import ScreenTimeout, Tmux

ROOT = Path(__file__).resolve().parents[1]
SIZE = (120, 40)  # the terminal the app is measured in
RESULT_PREFIX = "RESULT "
# the pattern environment as the benchmarks train it (grpo-tui train flags): 4 generations, 8 per batch, 16 tokens
PATTERN_FLAGS = (
    "--rl-env-module",
    str(ROOT / "examples" / "pattern_env.py"),
    "--rl-env-class",
    "PatternEnv",
    "--rl-num-generations",
    "4",
    "--batch-size",
    "8",
    "--rl-max-new-tokens",
    "16",
)


def child_env() -> dict:
    """The environment of every child: this checkout importable, output unbuffered, no run's marker inherited."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.pop("GRPO_TUI_RUN_DIR", None)
    return env


def module_cmd(module: str, *args) -> list[str]:
    return [sys.executable, "-m", module, *map(str, args)]


def run_probe(module: str, *args, timeout: float = 900, show_stderr: bool = False) -> dict:
    """Run ``python -m module ARGS`` (one measurement, with its own memory and imports); returns its RESULT."""
    proc = subprocess.run(
        module_cmd(module, *args),
        stdout=subprocess.PIPE,
        stderr=None if show_stderr else subprocess.PIPE,
        text=True,
        timeout=timeout,
        env=child_env(),
        cwd=ROOT,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    output = proc.stdout[-3000:] + "\n" + (proc.stderr or "")[-3000:]
    raise RuntimeError(f"{module} {' '.join(map(str, args[:1]))} exited with {proc.returncode}:\n{output}")


def report(result: dict) -> None:
    """A probe's result, for ``run_probe``."""
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Receiver:
    """A local alert receiver (HTTP on 127.0.0.1, any path): what a run's notify URL posts to, counted.

    ``with Receiver() as r:`` serves in a thread until the block ends; ``r.url`` is an apprise ``json://`` URL."""

    def __init__(self):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.posts += 1
                self.send_response(200)
                self.end_headers()

            def log_message(self, format, *args):
                pass

        self.posts = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/alerts"
        self.thread = threading.Thread(target=self.server.serve_forever, name="alert receiver", daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- the app in a terminal ------------------------------------------------------------------------------


def terminal(session: str) -> Tmux:
    return Tmux(env=child_env(), width=SIZE[0], height=SIZE[1], session=session)


def shown_at(tmux: Tmux, text: str, timeout: float, top_lines: int = 3) -> float | None:
    """The perf_counter time at which the pane's top lines (the app's header) first show ``text``; None if not."""
    try:
        tmux.wait_screen(lambda s: text in "\n".join(s.splitlines()[:top_lines]), timeout, repr(text), every=0.01)
    except ScreenTimeout:
        return None
    return time.perf_counter()


def cpu_shares(app: psutil.Process, server: psutil.Process, seconds: float) -> tuple[float, float]:
    """CPU time of the app and the tmux server over ``seconds`` of wall time, as shares of one core."""
    before, t = (app.cpu_times(), server.cpu_times()), time.perf_counter()
    time.sleep(seconds)
    after, wall = (app.cpu_times(), server.cpu_times()), time.perf_counter() - t
    app_share, server_share = ((a.user + a.system - b.user - b.system) / wall for a, b in zip(after, before))
    return app_share, server_share


# -- running and printing -------------------------------------------------------------------------------


def work_dir(path: Path | None, prefix: str) -> Path:
    """``path`` (made if missing), else a new temporary folder; says where, and how busy the machine is."""
    work = path or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work dir: {work}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}", flush=True)
    return work


def run_each(names: Iterable[str], run: Callable[[str], None]) -> None:
    for name in names:
        print(f"running {name} ...", flush=True)
        t = time.perf_counter()
        run(name)
        print(f"  done in {time.perf_counter() - t:.0f} s", flush=True)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def median_of_all(values: list[float | None]) -> float | None:
    """The median, or None when a value is missing (a measurement that timed out)."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def shown_runs(values: list[float | None]) -> str:
    return "runs: " + ", ".join("-" if v is None else f"{v:.2f}" for v in values)


class Table:
    """The results: one row per value, with its target and whether it was met."""

    def __init__(self):
        self.rows: list[tuple[str, str, str, str]] = []

    def add(
        self,
        name: str,
        value: float | None,
        unit: str = "s",
        target: float | None = None,
        fmt: str = "{:.3f}",
        note: str = "",
    ) -> None:
        shown = "-" if value is None else fmt.format(value) + (f" {unit}" if unit else "")
        if note:
            shown += f"  ({note})"
        if target is None:
            self.rows.append((name, shown, "", ""))
            return
        limit = fmt.format(target) + (f" {unit}" if unit else "")
        if value is None:
            verdict = "MISS (no value)"
        elif value <= target:
            verdict = "pass"
        else:
            verdict = f"MISS x{value / target:.1f}"
        self.rows.append((name, shown, f"<= {limit}", verdict))

    def text(self, name: str, text: str) -> None:
        self.rows.append((name, text, "", ""))

    def section(self, title: str) -> None:
        self.rows.append((f"[{title}; load average {os.getloadavg()[0]:.1f}]", "", "", ""))

    def print(self) -> None:
        header = ("benchmark", "measured", "target", "result")
        widths = [max(len(r[i]) for r in [header, *self.rows] if not r[0].startswith("[")) for i in range(4)]
        print()
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        print("  ".join("-" * w for w in widths))
        for row in self.rows:
            print(row[0] if row[0].startswith("[") else "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


@contextlib.contextmanager
def busy_process(wanted: bool):
    """One process spinning on a CPU, in a session of its own, while the bench runs (``--busy``)."""
    if not wanted:
        yield
        return
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        yield
    finally:
        spin.kill()
        spin.wait()
