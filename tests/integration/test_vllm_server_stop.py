"""What a force stop of a vLLM server leaves in /dev/shm, with a real process tree in place of the engine: a child
made with multiprocessing's spawn context holds a named semaphore (``sem.mp-*``) and a shared-memory segment
(``psm_*``), as vLLM's engine and workers do. The stop KILLs the whole session, multiprocessing's resource tracker
included, so nobody is left to unlink them but the stop itself; a segment that existed before, or that a live
process still maps, is not the server's and stays."""

from __future__ import annotations

import os
import signal
import sys
from multiprocessing import shared_memory
from pathlib import Path

from trainer_core.generation import vllm_server

from ..helpers import wait_for

ENGINE = """
import multiprocessing as mp, sys, time
from multiprocessing import shared_memory

def engine(ready):
    lock = mp.get_context("spawn").Lock()  # a named semaphore, registered with the resource tracker
    memory = shared_memory.SharedMemory(create=True, size=4096)
    print("engine", lock._semlock.name, memory.name, flush=True)
    ready.set()
    time.sleep(600)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    ctx.Process(target=engine, args=(ready,)).start()
    ready.wait(60)
    time.sleep(600)
"""


def made(log: Path, timeout: float = 60) -> set[str]:
    """The semaphore and segment names the engine printed, once it has."""

    def printed() -> set[str] | None:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("engine "):
                _, sem, segment = line.split()
                return {"sem." + sem.lstrip("/"), segment.lstrip("/")}
        return None

    return wait_for(printed, timeout, what="the engine to start", show=lambda: log.read_text(errors="replace")[-2000:])


def test_a_force_stop_after_the_main_process_died_unlinks_its_semaphores_and_segments(tmp_path):
    before = shared_memory.SharedMemory(create=True, size=4096)  # not the server's: it stays
    script = tmp_path / "engine.py"
    script.write_text(ENGINE)
    log = tmp_path / "vllm_server.log"
    server = vllm_server.start([sys.executable, str(script)], dict(os.environ), log, 0, tmp_path / "run")
    try:
        names = made(log)
        assert {n for n in names if (vllm_server.SHM / n).exists()} == names
        kept = shared_memory.SharedMemory(create=True, size=4096)  # made while it ran, mapped by this process
        os.kill(server.process.pid, signal.SIGKILL)  # the main process dies; its engine lives on
        server.process.wait()
        assert vllm_server.stop(server, grace=0) == []
        assert not [n for n in names if (vllm_server.SHM / n).exists()], "the server's semaphore and segment stay"
        assert (vllm_server.SHM / before.name).exists() and (vllm_server.SHM / kept.name).exists()
        assert vllm_server.session_processes(server.process.pid) == []
        kept.close()
        kept.unlink()
    finally:
        vllm_server.stop(server, grace=0)
        before.close()
        before.unlink()
