"""Synthetic run folders in the documented format (docs/run-format.md), for the tests and the benchmarks.

Tests need finished runs that are the same bytes on every machine and every day; the benchmarks need ten
thousand of them, one of a million steps, or one a process logs into live. The caller says what happened (the
typed events, the log, the samples); this writes the folder with the contract's own RunFolder, events and encoder,
so a synthetic run reads as a trainer's does.
"""

from __future__ import annotations

import json
import os
import struct
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import EventWriter, dumps
from trainer_core.contract.run.events import Event, Metrics, RunFinished, RunStarted
from trainer_core.contract.run.folder import FORMAT_VERSION, RunFolder
from trainer_core.contract.run.ledger import EVAL_FILE
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import summarize

BATCH = 10_000  # lines per write: a write per line would make a million-step run slow


def _private(path: Path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")


def write_text(path: Path, text: str) -> None:
    """``text`` as a file private to the user, as the trainer makes its files."""
    with _private(path) as fh:
        fh.write(text)


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """One line per item of ``lines`` (which may be a generator), as a file private to the user."""
    with _private(path) as fh:
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) == BATCH:
                fh.write("\n".join(batch) + "\n")
                batch.clear()
        if batch:
            fh.write("\n".join(batch) + "\n")


def write_events(path: Path, events: Iterable[Event]) -> tuple[Event | None, Event | None]:
    """``events`` as EventWriter writes them (the same records and encoder); returns the first and the last."""
    first = last = None

    def lines() -> Iterator[str]:
        nonlocal first, last
        for event in events:
            if event.time is None:
                raise ValueError(f"a synthetic {type(event).__name__} event without its time")
            if first is None:
                first = event
            last = event
            yield dumps(event.to_record())

    write_lines(path, lines())
    return first, last


def new_run(runs_dir: str | Path, run_id: str, config: RunConfig | str) -> RunFolder:
    """A run folder holding only its config (``config.yaml`` text, or a RunConfig saved as the trainer saves it)."""
    folder = RunFolder.create(Path(runs_dir), run_id)
    if isinstance(config, RunConfig):
        folder.save_config(config)
    else:
        write_text(folder.config_file, config)
    return folder


def finished_state(folder: RunFolder, started: RunStarted, finished: RunFinished, gpus: Sequence[int] = ()) -> dict:
    """state.json of a run that began with ``started`` and ended with ``finished``. Its pids' recorded start times
    are before the run's, so no live process matches them and no reader takes the run for live."""
    assert started.time is not None and finished.time is not None and started.pid is not None
    return {
        "format_version": FORMAT_VERSION,
        "run_id": folder.run_id,
        "status": Status(finished.status).value,
        "pid": started.pid,
        "pid_start_time": started.time - 1.0,
        "root_pid": started.pid - 1,
        "root_start_time": started.time - 2.0,
        "command": ["python", "-m", "trainer_core", "worker", str(folder.path)],
        "placement": {"train_gpus": list(gpus), "server_gpus": [], "num_processes": 1},
        "host": started.host,
        "started": started.time,
        "ended": finished.time,
        "updated": finished.time,
        "max_steps": started.max_steps,
        "last_step": finished.step,
        "exit_reason": finished.reason,
    }


def write_finished_run(
    runs_dir: str | Path,
    run_id: str,
    config: RunConfig | str,
    events: Iterable[Event],
    *,
    log: Iterable[str] | None = None,
    samples: Iterable[dict] | None = None,
    folders: Iterable[str] = (),
    gpus: Sequence[int] = (),
    summary_config: dict | None = None,
) -> RunFolder:
    """Write a run that has ended and return its folder.

    ``events`` run from its ``run_started`` to its ``run_finished``, each with its own time (they may be a generator:
    they are written as they come); state.json is made from those two. ``log``: trainer.log's lines; ``samples``:
    samples.jsonl's records; ``folders``: the checkpoint (or ``final``) folders to make, relative to the run folder.
    ``summary_config``: the config's values, to store the ``summary`` RunFolder.record_end stores (computed without
    reading config.yaml back); None leaves it out, as in a run that ended before summaries existed.
    """
    folder = new_run(runs_dir, run_id, config)
    started, finished = write_events(folder.events_file, events)
    if not isinstance(started, RunStarted) or not isinstance(finished, RunFinished):
        raise ValueError("a finished run's events go from run_started to run_finished")
    if samples is not None:
        write_lines(folder.samples_file, (dumps(record) for record in samples))
    if log is not None:
        write_lines(folder.log_file, log)
    for name in folders:
        (folder.path / name).mkdir(parents=True, exist_ok=True)
    state = finished_state(folder, started, finished, gpus)
    if summary_config is not None:
        state["summary"] = summarize(folder, state["status"], state, summary_config)
    write_text(folder.state_file, json.dumps(state, indent=2) + "\n")
    return folder


def log_live(
    folder: RunFolder,
    steps: int,
    rate: float,
    values: Callable[[int], dict],
    ready: Callable[[], None] = lambda: None,
) -> None:
    """The trainer's side of a live run, with the trainer's own writers: state ``running`` with this process's pid,
    ``run_started``, then after ``ready()`` returns one metrics event every ``1/rate`` s, each stamped as it is
    written, and at the end ``run_finished`` and the final state."""
    config = folder.read_config()
    folder.initial_state()
    folder.write_state(status=Status.RUNNING, max_steps=steps)
    every = 1 / rate
    with EventWriter(folder.events_file) as writer:
        writer.emit(
            RunStarted(
                run_id=folder.run_id,
                pid=os.getpid(),
                host="synthetic",
                world_size=1,
                project_name=config.get("project_name", ""),
                model=config.get("model", ""),
                max_steps=steps,
            )
        )
        ready()
        t0 = time.time()
        for step in range(1, steps + 1):
            time.sleep(max(0.0, t0 + step * every - time.time()))
            writer.emit(Metrics(step=step, values=values(step)))
        folder.record_end(Status.COMPLETED, "max_steps reached", steps, emit=writer.emit)


def _safetensors(path: Path, nbytes: int = 16) -> None:
    header = json.dumps(
        {"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [nbytes // 4], "data_offsets": [0, nbytes]}}
    ).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * nbytes)


def _torch_file(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{path.stem}/data.pkl", b"\x80\x02}q\x00.")
        archive.writestr(f"{path.stem}/version", b"3\n")


def write_checkpoint(checkpoints_dir: Path, step: int, evaluation: Event | None = None) -> Path:
    """A ``checkpoint-N`` folder the checks call complete (tiny stand-ins for weights, optimizer and scheduler),
    with the held-out eval of its step recorded beside it (run/ledger.py) when one is given."""
    path = Path(checkpoints_dir) / f"checkpoint-{step}"
    path.mkdir(parents=True, exist_ok=True)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    _safetensors(path / "model.safetensors")
    _torch_file(path / "optimizer.pt")
    _torch_file(path / "scheduler.pt")
    if evaluation is not None:
        (path / EVAL_FILE).write_text(json.dumps(evaluation.to_record(), indent=2) + "\n")
    return path
