"""Is the monitor fast and light enough? Load time, live latency, CPU, memory and cold start of the app.

The app is only useful if it keeps up with a trainer without getting in its way: opening a long run must
feel instant, a new step must show up quickly, and watching a run must cost next to nothing. This measures,
in one run, against synthetic run folders in the documented format (docs/run-format.md):

  load       100k-step run (25 metric keys a step, ~105 MB of events.jsonl) until the monitor holds every
             point: RunStream.poll() alone and the real app under run_test until the charts are painted;
             side by side, the same scalars in a TensorBoard event file loaded by EventAccumulator
  latency    a writer process logs 10 steps/s; time from the event's `time` to the monitor's worker
             reading it, the charts taking it and the reward chart painting it (p50/p95/max)
  cpu        `grpo-tui watch RUN` in a 120x40 tmux pane while a run logs 10 steps/s: CPU share of a core
  rss        peak RSS of the app (run_test) loading a 1M-step run
  coldstart  `python -m grpo_tui watch RUN` in tmux until the pane shows the run id; import time alone

Generated runs are cached in the work dir. Timing hooks wrap RunStream.poll, MetricChart.redraw and
MetricChart.render_line inside the measured app process only; nothing in the app is changed.

    .venv/bin/python bench/app_bench.py [--work-dir DIR] [--only NAME] [--skip-tensorboard] [--profile]

TensorBoard (`pip install tensorboard`) is needed for the side-by-side only; torch provides its writer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer_core.contract.config.run_config import RunConfig  # noqa: E402
from trainer_core.contract.run.event_log import EventWriter, dumps, read_events  # noqa: E402
from trainer_core.contract.run.events import Metrics, RunFinished, RunStarted  # noqa: E402
from trainer_core.contract.run.folder import RunFolder  # noqa: E402
from trainer_core.contract.run.status import Status  # noqa: E402

BENCHES = ("load", "latency", "cpu", "rss", "coldstart")
# (key, scale): what TRL logs for a GRPO step with one reward function, in realistic magnitudes.
METRICS = (
    ("loss", 1e-3),
    ("grad_norm", 2.0),
    ("learning_rate", 1e-5),
    ("num_tokens", None),
    ("completions/mean_length", 500.0),
    ("completions/min_length", 100.0),
    ("completions/max_length", 1000.0),
    ("completions/clipped_ratio", 1.0),
    ("completions/mean_terminated_length", 500.0),
    ("completions/min_terminated_length", 100.0),
    ("completions/max_terminated_length", 1000.0),
    ("rewards/score_episode/mean", 1.0),
    ("rewards/score_episode/std", 0.5),
    ("reward", 1.0),
    ("reward_std", 0.5),
    ("frac_reward_zero_std", 1.0),
    ("kl", 1e-2),
    ("entropy", 2.0),
    ("clip_ratio/low_mean", 1e-3),
    ("clip_ratio/low_min", 1e-3),
    ("clip_ratio/high_mean", 1e-3),
    ("clip_ratio/high_max", 1e-3),
    ("clip_ratio/region_mean", 1e-3),
    ("step_time", 10.0),
    ("epoch", None),
)
LOAD_STEPS = 100_000
RSS_STEPS = 1_000_000
SMALL_STEPS = 200
RATE = 10.0
LATENCY_STEPS = 150
CPU_SECONDS = 20.0
IDLE_SECONDS = 10.0
SIZE = (120, 40)
TARGETS = {"load": 1.0, "latency_p95": 0.250, "cpu": 0.05, "rss_mb": 200.0, "coldstart": 1.0}
RESULT_PREFIX = "RESULT "
WATCH_MODULES = ["grpo_tui.cli", "grpo_tui.app", "grpo_tui.screens.runs", "grpo_tui.screens.monitor"]


def metric_values(step: int, steps: int, rand, keys: int = len(METRICS)) -> dict:
    values = {}
    for key, scale in METRICS[:keys]:
        if key == "num_tokens":
            values[key] = float(step * 4096)
        elif key == "epoch":
            values[key] = step / steps
        else:
            values[key] = rand() * scale
    return values


# -- synthetic run folders ------------------------------------------------------------------------------


def cached_run(work: Path, name: str, steps: int, keys: int = len(METRICS)) -> RunFolder:
    """A completed run of ``steps`` metrics events, made once per work dir (one runs dir per run)."""
    base = work / name
    done = base / "done.json"
    spec = {"steps": steps, "keys": keys}
    runs = base / "runs"
    if done.exists() and json.loads(done.read_text()) == spec:
        return RunFolder(next(p for p in runs.iterdir() if p.is_dir()))
    shutil.rmtree(base, ignore_errors=True)
    print(f"generating {name}: {steps:,} steps x {keys} keys ...", flush=True)
    t = time.perf_counter()
    folder = RunFolder.create(runs, f"20250101-000000-{name}")
    RunConfig(model="m", rl_env_module="e", rl_env_class="E").save(folder.config_file)
    rand = random.Random(0).random
    start = time.time() - steps * 10.0
    # the lines EventWriter writes (the same typed events and encoder), batched: a million flushes would be slow
    with open(folder.events_file, "w", encoding="utf-8") as fh:
        fh.write(
            dumps(
                RunStarted(
                    time=round(start, 3),
                    run_id=folder.run_id,
                    pid=1,
                    host="bench",
                    world_size=1,
                    project_name="bench",
                    model="m",
                    max_steps=steps,
                ).to_record()
            )
            + "\n"
        )
        lines = []
        for step in range(1, steps + 1):
            event = Metrics(
                time=round(start + step * 10.0, 3), step=step, values=metric_values(step, steps, rand, keys)
            )
            lines.append(dumps(event.to_record()))
            if len(lines) == 10_000:
                fh.write("\n".join(lines) + "\n")
                lines.clear()
        if lines:
            fh.write("\n".join(lines) + "\n")
        end = round(start + steps * 10.0 + 1, 3)
        fh.write(
            dumps(RunFinished(time=end, status=Status.COMPLETED, reason="max_steps reached", step=steps).to_record())
            + "\n"
        )
    folder.write_state(
        format_version=1,
        run_id=folder.run_id,
        status=Status.COMPLETED,
        pid=1,
        pid_start_time=0.0,
        host="bench",
        started=round(start, 3),
        ended=end,
        max_steps=steps,
        last_step=steps,
        exit_reason=None,
    )
    done.write_text(json.dumps(spec))
    size = folder.events_file.stat().st_size
    print(f"  {size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s", flush=True)
    return folder


def fresh_live_run(work: Path, name: str) -> RunFolder:
    base = work / name
    shutil.rmtree(base, ignore_errors=True)
    folder = RunFolder.create(base / "runs", f"20250101-000000-{name}")
    RunConfig(model="m", rl_env_module="e", rl_env_class="E").save(folder.config_file)
    return folder


# -- child processes ------------------------------------------------------------------------------------


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("GRPO_TUI_RUN_DIR", None)
    return env


def child_cmd(kind: str, *args) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", kind, *map(str, args)]


def run_child(kind: str, *args, timeout: float = 900, show_stderr: bool = False) -> dict:
    """Run one measurement in a fresh process (its own memory and imports); returns its RESULT line."""
    proc = subprocess.run(
        child_cmd(kind, *args),
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
    raise RuntimeError(f"child {kind} exited with {proc.returncode}:\n{output}")


def report(result: dict) -> None:
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def children_usage() -> dict:
    """CPU seconds and the largest peak RSS of this process's finished children (the backlog reader)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"children_cpu": usage.ru_utime + usage.ru_stime, "children_peak_rss_mb": usage.ru_maxrss / 1024}


def child_stream(path: str, profile: str = "0") -> None:
    from grpo_tui.services.run_stream import RunStream

    stream = RunStream(RunFolder(Path(path)))
    t, cpu = time.perf_counter(), time.process_time()
    stream.poll()
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    if profile == "1":
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(RunStream(RunFolder(Path(path))).poll)
        print(f"cProfile of RunStream.poll() on {path}:", file=sys.stderr)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(10)
    report({"seconds": seconds, "cpu": cpu, "points": len(stream.series["reward"]), "peak_rss_mb": peak_rss_mb()})


class Marks:
    """Wall-clock marks from inside the app: when the worker read, the charts took, the chart painted.

    Each entry is (time, points, last step) for the reward series at that moment.
    """

    def __init__(self):
        self.reads: list[tuple[float, int, int]] = []
        self.plotted: list[tuple[float, int, int]] = []
        self.painted: list[tuple[float, int, int]] = []

    def install(self) -> None:
        from grpo_tui.services.run_stream import RunStream
        from grpo_tui.widgets.metric_chart import MetricChart

        marks = self
        poll, redraw, render_line = RunStream.poll, MetricChart.redraw, MetricChart.render_line

        def reward_point(series) -> tuple[int, int]:
            return (len(series), series.steps[-1]) if series is not None and len(series) else (0, 0)

        def snapshot_point(series) -> tuple[int, int]:
            return (series.count, series.end_step) if series is not None and series.count else (0, 0)

        def timed_poll(stream):
            update = poll(stream)
            marks.reads.append((time.time(), *reward_point(stream.series.get("reward"))))
            return update

        def timed_redraw(chart):
            redraw(chart)
            if chart.key == "reward":
                chart._bench_shown = snapshot_point(chart._series)
                marks.plotted.append((time.time(), *chart._bench_shown))

        def timed_render_line(chart, y):
            # the chart repaints only the lines that changed: its first line painted after a redraw marks it
            strip = render_line(chart, y)
            shown = getattr(chart, "_bench_shown", None)
            if chart.key == "reward" and shown and shown != getattr(chart, "_bench_painted", None):
                chart._bench_painted = shown
                marks.painted.append((time.time(), *shown))
            return strip

        RunStream.poll, MetricChart.redraw, MetricChart.render_line = timed_poll, timed_redraw, timed_render_line

    @staticmethod
    def first(entries, points: int = 0, step: int = 0) -> float | None:
        return next((t for t, n, last in entries if n >= points and last >= step), None)


def child_app_load(runs_dir: str, path: str, points: str, timeout: str = "600") -> None:
    """Open the monitor on a finished run and wait until the reward chart has painted every point."""
    import psutil

    from grpo_tui.app import make_app

    marks = Marks()
    marks.install()
    points_wanted = int(points)

    async def main() -> dict:
        t0 = time.time()
        app = make_app(Path(runs_dir), start="watch", watch=Path(path))
        async with app.run_test(size=SIZE) as pilot:
            ready = time.time()
            deadline = t0 + float(timeout)
            while Marks.first(marks.painted, points_wanted) is None and time.time() < deadline:
                await pilot.pause(0.05)
            rss = psutil.Process().memory_info().rss / 2**20
            series = app.screen.charts.get("reward")  # the snapshot the reward chart last drew
            return {
                "points": len(series) if series is not None else 0,
                "app_ready": ready - t0,
                "read": _since(t0, Marks.first(marks.reads, points_wanted)),
                "plotted": _since(t0, Marks.first(marks.plotted, points_wanted)),
                "painted": _since(t0, Marks.first(marks.painted, points_wanted)),
                "rss_mb": rss,
                "peak_rss_mb": peak_rss_mb(),
                "cpu": time.process_time(),
                **children_usage(),
            }

    report(asyncio.run(main()))


def _since(t0: float, t: float | None) -> float | None:
    return None if t is None else t - t0


def child_writer(path: str, steps: str, rate: str) -> None:
    """The trainer's side of a live run: state with this pid, then metrics at ``rate`` steps/s after 'go'."""
    folder = RunFolder(Path(path))
    steps_n, every = int(steps), 1 / float(rate)
    folder.initial_state()
    folder.write_state(status=Status.RUNNING, max_steps=steps_n)
    rand = random.Random(1).random
    with EventWriter(folder.events_file) as events:
        events.emit(
            RunStarted(
                run_id=folder.run_id,
                pid=os.getpid(),
                host="bench",
                world_size=1,
                project_name="bench",
                model="m",
                max_steps=steps_n,
            )
        )
        print("ready", flush=True)
        sys.stdin.readline()
        t0 = time.time()
        for step in range(1, steps_n + 1):
            time.sleep(max(0.0, t0 + step * every - time.time()))
            events.emit(Metrics(step=step, values=metric_values(step, steps_n, rand)))
        # the trainer's last words: the run_finished event, then the final state
        folder.record_end(Status.COMPLETED, "max_steps reached", steps_n, emit=events.emit)


def start_writer(folder: RunFolder, steps: int) -> subprocess.Popen:
    writer = subprocess.Popen(
        child_cmd("writer", folder.path, steps, RATE),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=ROOT,
    )
    if writer.stdout.readline().strip() != "ready":
        writer.kill()
        raise RuntimeError("the writer did not start")
    return writer


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def child_app_latency(path: str, steps: str) -> None:
    """The app watching a live run; per step, the delay from the writer's `time` to each mark."""
    from grpo_tui.app import make_app

    marks = Marks()
    marks.install()
    folder = RunFolder(Path(path))
    steps_n = int(steps)
    writer = start_writer(folder, steps_n)

    async def main() -> dict:
        app = make_app(folder.path.parent, start="watch", watch=folder.path)
        async with app.run_test(size=SIZE) as pilot:
            while not marks.reads or not marks.plotted:
                await pilot.pause(0.01)
            writer.stdin.write("go\n")
            writer.stdin.flush()
            deadline = time.time() + steps_n / RATE + 15
            while Marks.first(marks.painted, step=steps_n) is None and time.time() < deadline:
                await pilot.pause(0.01)
        # when each step was written: the events' own times, as the writer stamped them
        written = {e.step: e.time for e in read_events(folder.events_file) if isinstance(e, Metrics)}
        out = {"steps": steps_n}
        for name, entries in (("read", marks.reads), ("plotted", marks.plotted), ("painted", marks.painted)):
            delays = [
                t - written[s]
                for s in range(1, steps_n + 1)
                if s in written and (t := Marks.first(entries, step=s)) is not None
            ]
            out[name] = delays
        return out

    try:
        report(asyncio.run(main()))
    finally:
        stop_process(writer)


def child_tb_write(logdir: str, steps: str) -> None:
    """The same scalars as the 100k run, the way transformers' TensorBoardCallback logs them."""
    from torch.utils.tensorboard import SummaryWriter

    steps_n = int(steps)
    rand = random.Random(0).random
    start = time.time() - steps_n * 10.0
    writer = SummaryWriter(logdir)
    for step in range(1, steps_n + 1):
        walltime = start + step * 10.0
        for key, value in metric_values(step, steps_n, rand).items():
            writer.add_scalar(key, value, step, walltime=walltime)
    writer.close()
    report({"bytes": sum(p.stat().st_size for p in Path(logdir).iterdir())})


def child_tb_load(logdir: str) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    t, cpu = time.perf_counter(), time.process_time()
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})
    acc.Reload()
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    report({"seconds": seconds, "cpu": cpu, "points": len(acc.Scalars("reward")), "peak_rss_mb": peak_rss_mb()})


def child_import(*modules: str) -> None:
    import importlib

    t = time.perf_counter()
    for module in modules:
        importlib.import_module(module)
    report({"seconds": time.perf_counter() - t})


CHILDREN = {
    "stream": child_stream,
    "app-load": child_app_load,
    "writer": child_writer,
    "app-latency": child_app_latency,
    "tb-write": child_tb_write,
    "tb-load": child_tb_load,
    "import": child_import,
}


# -- tmux -----------------------------------------------------------------------------------------------


class Tmux:
    """A private tmux server (own socket, no user config) with one detached session of a fixed size."""

    def __init__(self, work: Path, tag: str):
        self.socket = work / f"tmux-{os.getpid()}-{tag}.sock"
        self.conf = work / "tmux.conf"
        self.conf.write_text("set -g status off\nset -g default-terminal tmux-256color\n")

    def tmux(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["tmux", "-S", str(self.socket), "-f", str(self.conf), *args],
            capture_output=True,
            text=True,
            env=child_env(),
            cwd=ROOT,
        )

    def start(self, argv: list[str]) -> int:
        """Starts ``argv`` as the pane's process; returns its pid."""
        proc = self.tmux("new-session", "-d", "-s", "bench", "-x", str(SIZE[0]), "-y", str(SIZE[1]), *argv)
        if proc.returncode != 0:
            raise RuntimeError(f"tmux new-session failed: {proc.stderr}")
        return int(self.tmux("display-message", "-p", "-t", "bench", "#{pane_pid}").stdout.strip())

    def server_pid(self) -> int:
        return int(self.tmux("display-message", "-p", "#{pid}").stdout.strip())

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "bench").stdout

    def wait_for(self, text: str, timeout: float, every: float = 0.01, top_lines: int = 3) -> float | None:
        """The perf_counter time at which the pane's top lines (the monitor's header) first show ``text``."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if text in "\n".join(self.screen().splitlines()[:top_lines]):
                return time.perf_counter()
            time.sleep(every)
        return None

    def close(self, pane_pid: int | None = None) -> None:
        self.tmux("kill-server")
        self.socket.unlink(missing_ok=True)
        if pane_pid:
            import psutil

            try:
                psutil.Process(pane_pid).wait(5)
            except psutil.NoSuchProcess:
                pass
            except psutil.TimeoutExpired:
                psutil.Process(pane_pid).kill()


def watch_argv(folder: RunFolder) -> list[str]:
    return [sys.executable, "-m", "grpo_tui", "watch", str(folder.path), "--runs-dir", str(folder.path.parent)]


# -- the benchmarks -------------------------------------------------------------------------------------


class Table:
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


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def bench_load(work: Path, table: Table, args) -> None:
    folder = cached_run(work, "load100k", LOAD_STEPS)
    size = folder.events_file.stat().st_size
    table.section(f"load: {LOAD_STEPS:,} steps x {len(METRICS)} keys, events.jsonl {size / 1e6:.0f} MB (in page cache)")
    stream = run_child("stream", folder.path, "1" if args.profile else "0", show_stderr=args.profile)
    table.add("RunStream(folder).poll()", stream["seconds"], target=TARGETS["load"], note=f"CPU {stream['cpu']:.2f} s")
    app = run_child("app-load", folder.path.parent, folder.path, LOAD_STEPS)
    table.add("app: run_test started (pilot ready)", app["app_ready"])
    table.add("app: worker has every point", app["read"])
    table.add(
        "app: reward chart painted all points",
        app["painted"],
        target=TARGETS["load"],
        note=f"{app['points']:,} points; process CPU {app['cpu']:.2f} s incl. start, "
        f"backlog child {app['children_cpu']:.2f} s",
    )
    if args.skip_tensorboard:
        return
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        table.add("TensorBoard: not installed (pip install tensorboard)", None)
        return
    tb_steps = args.tb_steps
    logdir = work / f"tb{tb_steps}"
    done = logdir / "done.json"
    if not done.exists():
        shutil.rmtree(logdir, ignore_errors=True)
        print(f"writing the TensorBoard side: {tb_steps:,} steps x {len(METRICS)} scalars ...", flush=True)
        t = time.perf_counter()
        written = run_child("tb-write", logdir, tb_steps)
        print(f"  {written['bytes'] / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s", flush=True)
        done.write_text(json.dumps(written))
    tb = run_child("tb-load", logdir)
    scale = LOAD_STEPS / tb_steps
    note = f"{tb['points']:,} points; CPU {tb['cpu'] * scale:.1f} s" + (
        f"; measured on {tb_steps:,} steps, x{scale:g}" if scale != 1 else ""
    )
    tb_seconds = tb["seconds"] * scale
    tb_mb = json.loads(done.read_text())["bytes"] * scale / 1e6
    table.add(f"TensorBoard EventAccumulator.Reload() ({tb_mb:.0f} MB)", tb_seconds, note=note)
    table.add(
        "ratio TensorBoard / RunStream.poll",
        tb_seconds / stream["seconds"],
        unit="",
        fmt="{:.1f}x",
        note=f"CPU time ratio {tb['cpu'] * scale / stream['cpu']:.1f}x",
    )
    if app["painted"]:
        table.add("ratio TensorBoard / app painted", tb_seconds / app["painted"], unit="", fmt="{:.1f}x")


def bench_latency(work: Path, table: Table, args) -> None:
    table.section(f"latency: writer at {RATE:g} steps/s, {LATENCY_STEPS} steps, app under run_test {SIZE[0]}x{SIZE[1]}")
    folder = fresh_live_run(work, "latency")
    result = run_child("app-latency", folder.path, LATENCY_STEPS, timeout=LATENCY_STEPS / RATE + 120)
    labels = {
        "read": "monitor worker read it",
        "plotted": "charts given it (UI thread)",
        "painted": "reward chart painted it",
    }
    for name, label in labels.items():
        delays = [d * 1000 for d in result[name]]
        table.add(
            f"write -> {label}: p50",
            percentile(delays, 0.5),
            unit="ms",
            fmt="{:.0f}",
            note=f"{len(delays)}/{result['steps']} steps",
        )
        # the target is the reward chart painting the step
        table.add(
            f"write -> {label}: p95",
            percentile(delays, 0.95),
            unit="ms",
            fmt="{:.0f}",
            target=TARGETS["latency_p95"] * 1000 if name == "painted" else None,
        )
        table.add(f"write -> {label}: max", max(delays) if delays else None, unit="ms", fmt="{:.0f}")


def bench_cpu(work: Path, table: Table, args) -> None:
    import psutil

    table.section(
        f"cpu: `grpo-tui watch RUN` in tmux {SIZE[0]}x{SIZE[1]}, run logging {RATE:g} steps/s, {CPU_SECONDS:g} s window"
    )
    folder = fresh_live_run(work, "cpu")
    warmup = 3.0
    writer = start_writer(folder, int(RATE * (warmup + CPU_SECONDS + 30)))
    tmux = Tmux(work, "cpu")
    pane = None
    try:
        pane = tmux.start(watch_argv(folder))
        if tmux.wait_for(folder.run_id, timeout=30) is None:
            raise RuntimeError(f"the app did not show the run id; pane:\n{tmux.screen()}")
        app, server = psutil.Process(pane), psutil.Process(tmux.server_pid())
        time.sleep(warmup)
        idle_app, _ = cpu_shares(app, server, IDLE_SECONDS)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        time.sleep(warmup)
        app_share, server_share = cpu_shares(app, server, CPU_SECONDS)
        screen = tmux.screen()
    finally:
        tmux.close(pane)
        stop_process(writer)
    step_line = next((line.strip() for line in screen.splitlines() if "step " in line), "?")
    table.add(
        "app process CPU (share of one core)", app_share * 100, unit="%", fmt="{:.1f}", target=TARGETS["cpu"] * 100
    )
    table.add("tmux server CPU (drawing the pane)", server_share * 100, unit="%", fmt="{:.1f}")
    table.add(
        f"app CPU, same live run before it logs a step ({IDLE_SECONDS:g} s)", idle_app * 100, unit="%", fmt="{:.1f}"
    )
    table.text("pane header at the end", step_line[:70])


def cpu_shares(app, server, seconds: float) -> tuple[float, float]:
    """CPU time of the app and the tmux server over ``seconds`` of wall time, as shares of one core."""
    before, t = (app.cpu_times(), server.cpu_times()), time.perf_counter()
    time.sleep(seconds)
    after, wall = (app.cpu_times(), server.cpu_times()), time.perf_counter() - t
    return tuple((a.user + a.system - b.user - b.system) / wall for a, b in zip(after, before))


def bench_rss(work: Path, table: Table, args) -> None:
    keys = args.rss_keys
    folder = cached_run(work, f"rss1m-{keys}k", RSS_STEPS, keys)
    size = folder.events_file.stat().st_size
    table.section(f"rss: {RSS_STEPS:,} steps x {keys} keys, events.jsonl {size / 1e6:.0f} MB, app under run_test")
    app = run_child("app-load", folder.path.parent, folder.path, RSS_STEPS, 1200, timeout=1500)
    table.add(
        "peak RSS while loading (ru_maxrss)", app["peak_rss_mb"], unit="MB", fmt="{:.0f}", target=TARGETS["rss_mb"]
    )
    table.add("peak RSS of the backlog child reading it", app["children_peak_rss_mb"], unit="MB", fmt="{:.0f}")
    table.add("RSS once painted", app["rss_mb"], unit="MB", fmt="{:.0f}")
    table.add(
        "every key at 16 B/point (what a naive store would hold)",
        (keys + 1) * 16 * RSS_STEPS / 2**20,
        unit="MB",
        fmt="{:.0f}",
    )
    table.add("time until the reward chart painted all points", app["painted"], note=f"{app['points']:,} points")


def bench_coldstart(work: Path, table: Table, args) -> None:
    small = cached_run(work, "small", SMALL_STEPS)
    table.section(f"coldstart: `python -m grpo_tui watch RUN` in tmux {SIZE[0]}x{SIZE[1]} until the run id shows")
    times = [cold_start(work, small) for _ in range(args.repeat)]
    table.add(
        f"{SMALL_STEPS}-step run: median of {len(times)}",
        _median(times),
        target=TARGETS["coldstart"],
        note="runs: " + ", ".join("-" if t is None else f"{t:.2f}" for t in times),
    )
    big = cached_run(work, "load100k", LOAD_STEPS)
    table.add(f"{LOAD_STEPS:,}-step run (the header shows before the charts)", cold_start(work, big))
    for modules in (["grpo_tui.app"], WATCH_MODULES):
        imports = [run_child("import", *modules)["seconds"] for _ in range(args.repeat)]
        label = "grpo_tui.app" if len(modules) == 1 else "cli, app, screens.runs, screens.monitor"
        table.add(f"import {label}: median of {len(imports)}", statistics.median(imports))
    bare = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=child_env())
        bare.append(time.perf_counter() - t)
    table.add("python -c pass (interpreter start)", statistics.median(bare))


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if len(known) == len(values) else None


def cold_start(work: Path, folder: RunFolder) -> float | None:
    tmux = Tmux(work, "cold")
    t = time.perf_counter()
    pane = None
    try:
        pane = tmux.start(watch_argv(folder))
        shown = tmux.wait_for(folder.run_id, timeout=60)
    finally:
        tmux.close(pane)
    return None if shown is None else shown - t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", type=Path, default=None, help="cache generated runs here (default: a temp dir)")
    parser.add_argument("--only", choices=BENCHES, action="append", help="run only this benchmark (repeatable)")
    parser.add_argument("--skip-tensorboard", action="store_true", help="skip the TensorBoard side of 'load'")
    parser.add_argument(
        "--tb-steps",
        type=int,
        default=LOAD_STEPS,
        help="steps of the TensorBoard file; fewer are measured and scaled to 100k",
    )
    parser.add_argument(
        "--rss-keys",
        type=int,
        default=len(METRICS),
        choices=range(1, len(METRICS) + 1),
        metavar=f"1..{len(METRICS)}",
        help="metric keys per step of the 1M-step run",
    )
    parser.add_argument("--repeat", type=int, default=3, help="cold starts (and import timings) to take the median of")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of RunStream.poll on the 100k run")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        CHILDREN[args.child[0]](*args.child[1:])
        return 0
    if shutil.which("tmux") is None and set(args.only or BENCHES) & {"cpu", "coldstart"}:
        parser.error("the cpu and coldstart benchmarks need tmux")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="grpo-app-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work dir: {work}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}", flush=True)
    table = Table()
    for name in BENCHES:
        if name in (args.only or BENCHES):
            print(f"running {name} ...", flush=True)
            t = time.perf_counter()
            globals()[f"bench_{name}"](work, table, args)
            print(f"  done in {time.perf_counter() - t:.0f} s", flush=True)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
