"""The runs the app benchmark watches: long finished ones, cached in the work dir, and live ones a writer logs into.

Their metrics are what TRL logs for a GRPO step with one reward function, in realistic magnitudes. Run as
``python -m bench.app_runs RUN_DIR STEPS RATE``, this is the trainer's side of a live run: it says ``ready``,
waits for a line on stdin, then logs ``STEPS`` steps at ``RATE`` steps/s.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import ROOT, child_env, module_cmd
from tools.synthetic_runs import log_live, new_run, write_finished_run
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Event, Metrics, RunFinished, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

# (key, scale); the reward first, so that a run of fewer keys (--rss-keys) still has the chart the bench waits on
METRICS = (
    ("reward", 1.0),
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
RATE = 10.0  # steps/s of a live run
STEP_SECONDS = 10.0  # between two steps of a finished run


def config() -> RunConfig:
    return RunConfig(model="m", rl_env_module="e", rl_env_class="E")


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


def finished_events(run_id: str, steps: int, keys: int, start: float) -> Iterator[Event]:
    rand = random.Random(0).random
    yield RunStarted(
        time=round(start, 3),
        run_id=run_id,
        pid=999001,
        host="bench",
        world_size=1,
        project_name="bench",
        model="m",
        max_steps=steps,
    )
    for step in range(1, steps + 1):
        yield Metrics(
            time=round(start + step * STEP_SECONDS, 3), step=step, values=metric_values(step, steps, rand, keys)
        )
    end = round(start + steps * STEP_SECONDS + 1, 3)
    yield RunFinished(time=end, status=Status.COMPLETED, reason="max_steps reached", step=steps)


def cached_run(work: Path, name: str, steps: int, keys: int = len(METRICS)) -> RunFolder:
    """A completed run of ``steps`` metrics events, made once per work dir (one runs dir per run)."""
    base = work / name
    done = base / "done.json"
    spec = {"steps": steps, "keys": keys, "version": 2}
    runs = base / "runs"
    if done.exists() and json.loads(done.read_text()) == spec:
        return RunFolder(next(p for p in runs.iterdir() if p.is_dir()))
    shutil.rmtree(base, ignore_errors=True)
    print(f"generating {name}: {steps:,} steps x {keys} keys ...", flush=True)
    t = time.perf_counter()
    run_id = f"20250101-000000-{name}"
    start = time.time() - steps * STEP_SECONDS
    folder = write_finished_run(runs, run_id, config(), finished_events(run_id, steps, keys, start))
    done.write_text(json.dumps(spec))
    size = folder.events_file.stat().st_size
    print(f"  {size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s", flush=True)
    return folder


def fresh_live_run(work: Path, name: str) -> RunFolder:
    """A run folder with only its config, for ``start_writer`` to log into."""
    base = work / name
    shutil.rmtree(base, ignore_errors=True)
    return new_run(base / "runs", f"20250101-000000-{name}", config())


def start_writer(folder: RunFolder, steps: int) -> subprocess.Popen:
    """The writer process of a live run, once it is ready: write a line to its stdin for it to start logging."""
    writer = subprocess.Popen(
        module_cmd("bench.app_runs", folder.path, steps, RATE),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=ROOT,
    )
    assert writer.stdout is not None and writer.stdin is not None
    if writer.stdout.readline().strip() != "ready":
        writer.kill()
        raise RuntimeError("the writer did not start")
    return writer


def go(writer: subprocess.Popen) -> None:
    assert writer.stdin is not None
    writer.stdin.write("go\n")
    writer.stdin.flush()


def main() -> int:
    path, steps, rate = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    rand = random.Random(1).random

    def ready() -> None:
        print("ready", flush=True)
        sys.stdin.readline()

    log_live(RunFolder(path), steps, rate, lambda step: metric_values(step, steps, rand), ready)
    return 0


if __name__ == "__main__":
    sys.exit(main())
