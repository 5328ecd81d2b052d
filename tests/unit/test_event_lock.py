"""Two processes append to one events.jsonl (the run's root and its trainer): their lines never mix, and a write
that fails part-way is undone without cutting the other writer's line."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import time
from pathlib import Path

from trainer_core.contract.run.event_log import JsonlWriter

LINES = 300


class FlakyWriter(JsonlWriter):
    """Every ``every``-th line: half of it is written, a moment passes (another writer would get in now without
    the lock), then the disk reports itself full."""

    def __init__(self, path, every: int):
        super().__init__(path)
        self.every, self.calls, self.fail_next = every, 0, False

    def _write_some(self, data: memoryview) -> int:
        if self.fail_next:
            self.fail_next = False
            raise OSError(errno.ENOSPC, "No space left on device")
        self.calls += 1
        if self.calls % self.every == 0 and len(data) > 2:
            taken = os.write(self._fh.fileno(), data[: len(data) // 2])
            time.sleep(0.002)
            self.fail_next = True
            return taken
        return super()._write_some(data)


def _append(path: str, name: str, every: int, done: str, go) -> None:
    written = []
    writer = FlakyWriter(path, every)
    go.wait(60)  # both start together
    for i in range(LINES):
        time.sleep(0.0005)  # not a wait: the two writers interleave
        try:
            writer.write({"writer": name, "i": i, "pad": name * (1 + (i * 37) % 400)})
        except OSError as exc:
            assert exc.errno == errno.ENOSPC and exc.filename == path
        else:
            written.append(i)
    writer.close()
    Path(done).write_text(json.dumps(written))


def _together(target, argsets: list[tuple]) -> None:
    """``target(*args, go)`` in a process for each ``args``, all let go at once; each must exit 0."""
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=target, args=(*args, go)) for args in argsets]
    for proc in procs:
        proc.start()
    go.set()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0


def test_two_writers_with_partial_writes_leave_only_whole_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    _together(
        _append, [(str(path), name, every, str(tmp_path / f"{name}.json")) for name, every in (("a", 7), ("b", 5))]
    )
    data = path.read_bytes()
    assert data.endswith(b"\n")
    seen: dict[str, list[int]] = {"a": [], "b": []}
    for line in data.splitlines():
        record = json.loads(line)  # every line whole: a cut one would not parse
        assert record["pad"] == record["writer"] * (1 + (record["i"] * 37) % 400)
        seen[record["writer"]].append(record["i"])
    for name in ("a", "b"):
        written = json.loads((tmp_path / f"{name}.json").read_text())
        assert seen[name] == written  # each line it wrote, in order, once; none it gave up on
        assert LINES // 8 < LINES - len(written) < LINES // 3  # the failures did happen


def test_a_failed_write_after_a_torn_line_keeps_the_newline_that_closed_it(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"a":1}\n{"torn')
    writer = FlakyWriter(path, every=1)
    try:
        writer.write({"b": 2})
    except OSError:
        pass
    writer.every = LINES  # space again
    writer.write({"c": 3})
    writer.close()
    assert path.read_bytes() == b'{"a":1}\n{"torn\n{"c":3}\n'


def _merge_state(run_dir: str, name: str, go) -> None:
    from trainer_core.contract.run.folder import RunFolder

    folder = RunFolder(Path(run_dir))
    go.wait(60)
    for i in range(60):
        folder.write_state(**{f"{name}{i}": i})


def test_state_merges_from_two_processes_lose_nothing(tmp_path):
    from trainer_core.contract.run.folder import RunFolder

    folder = RunFolder.create(tmp_path)
    folder.write_state(run_id=folder.run_id)
    _together(_merge_state, [(str(folder.path), name) for name in "ab"])
    state = json.loads(folder.state_file.read_text())
    assert all(state[f"{name}{i}"] == i for name in "ab" for i in range(60))


def test_a_stop_request_is_replaced_whole_and_private(tmp_path):
    from trainer_core.contract.run.folder import RunFolder
    from trainer_core.contract.run.state import read_stop_reason

    folder = RunFolder.create(tmp_path)
    folder.request_stop("first")
    folder.request_stop("second")
    assert read_stop_reason(folder.stop_file) == "second"
    assert folder.stop_file.stat().st_mode & 0o077 == 0
    assert [p.name for p in folder.path.iterdir()] == ["stop_request"]  # no temporary file left
