"""The `load` section of ``bench.app``: a finished 100k-step run opened until the monitor holds every point.

``RunStream.poll()`` alone, its fast path (msgspec records) and its reference path (orjson dicts, then
``decode``) alternated in fresh processes, so that a machine busy with other work slows both alike; the app
under ``run_test`` until the reward chart has painted every point; and, side by side, the same scalars in a
TensorBoard event file loaded by ``EventAccumulator``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path

from bench.app_runs import METRICS, cached_run
from bench.common import Table, median_of_all, run_probe, shown_runs

LOAD_STEPS = 100_000
LOAD_TARGET = 1.0  # seconds until the reward chart holds every point; RunStream.poll() alone as well
PROBES = "bench.app_probes"


def bench_load(work: Path, table: Table, args) -> None:
    folder = cached_run(work, "load100k", LOAD_STEPS)
    size = folder.events_file.stat().st_size
    table.section(f"load: {LOAD_STEPS:,} steps x {len(METRICS)} keys, events.jsonl {size / 1e6:.0f} MB (in page cache)")
    # the fast path (msgspec records) and the reference path (orjson dicts, then decode) alternate, each run in a
    # fresh process, so that a machine busy with other work slows both alike
    runs: dict[str, list[dict]] = {"1": [], "0": []}
    for turn in range(args.repeat):
        for fast in ("1", "0") if turn % 2 == 0 else ("0", "1"):
            profile = "1" if args.profile and turn == 0 and fast == "1" else "0"
            runs[fast].append(run_probe(PROBES, "stream", folder.path, profile, fast, show_stderr=profile == "1"))
    fast, reference = (summary(runs[k]) for k in ("1", "0"))
    table.add("RunStream(folder).poll()", fast["seconds"], target=LOAD_TARGET, note=fast["note"])
    table.add("the same, every line the reference way", reference["seconds"], note=reference["note"])
    table.add(
        "ratio reference / fast path",
        reference["seconds"] / fast["seconds"],
        unit="",
        fmt="{:.2f}x",
        note=f"CPU {reference['cpu'] / fast['cpu']:.2f}x",
    )
    apps = [run_probe(PROBES, "app-load", folder.path.parent, folder.path, LOAD_STEPS) for _ in range(args.repeat)]
    painted = median_of_all([a["painted"] for a in apps])
    table.add("app: run_test started (pilot ready)", statistics.median(a["app_ready"] for a in apps))
    table.add("app: worker has every point", median_of_all([a["read"] for a in apps]))
    table.add(
        "app: reward chart painted all points",
        painted,
        target=LOAD_TARGET,
        note=f"{min(a['points'] for a in apps):,} points; median of {len(apps)} ({shown_runs([a['painted'] for a in apps])}); "
        f"process CPU {statistics.median(a['cpu'] for a in apps):.2f} s incl. start, "
        f"backlog child {statistics.median(a['children_cpu'] for a in apps):.2f} s",
    )
    if not args.skip_tensorboard:
        tensorboard_side(work, table, args, {"seconds": fast["seconds"], "cpu": fast["cpu"]}, {"painted": painted})


def summary(runs: list[dict]) -> dict:
    """The median wall and CPU seconds of a probe's runs, and a note with the CPU and every run's wall time."""
    seconds, cpu = statistics.median(r["seconds"] for r in runs), statistics.median(r["cpu"] for r in runs)
    note = f"CPU {cpu:.2f} s; median of {len(runs)}, {shown_runs([r['seconds'] for r in runs])}"
    return {"seconds": seconds, "cpu": cpu, "note": note}


def tensorboard_side(work: Path, table: Table, args, stream: dict, app: dict) -> None:
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
        written = run_probe(PROBES, "tb-write", logdir, tb_steps)
        print(f"  {written['bytes'] / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s", flush=True)
        done.write_text(json.dumps(written))
    tb = run_probe(PROBES, "tb-load", logdir)
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
