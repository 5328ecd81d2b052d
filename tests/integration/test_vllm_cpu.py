"""Real vLLM on the CPU (docs/vllm-cpu.md): colocate training through ``grpo-tui train`` of .venv-vllm, with the
weight sync on (TRL's logged log-prob difference stays small, no ``sampling_mismatch``) and off on purpose
(``GRPO_TUI_VLLM_NO_SYNC=1``: the difference grows and the rule fires), and the life of a real ``trl vllm-serve``
as vllm_server.py runs it: start on 127.0.0.1 in its own session, readiness, a generate (TRL's, and a held-out
eval's through the server: K seeded samples per prompt), and after a graceful
stop, a force stop and a main process killed mid-run, nothing left (processes, /dev/shm/psm_* and sem.mp-*, sockets, port).

They run in every suite (``GRPO_TUI_VLLM_TESTS=0`` leaves them out). .venv-vllm is built by ``./dev vllm-env`` in
the background from the start of a session that runs them (tests/vllm_env.py; cached by its stamp afterwards),
and each engine start takes tens of seconds on two cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from trainer_core.contract.config.ports import free_port
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import HealthWarning, Metrics
from trainer_core.generation import vllm_server

from .. import vllm_env
from ..helpers import PATTERN_FLAGS, events_of, only_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(vllm_env.skipped(), reason=f"{vllm_env.OPT_OUT}=0: real vLLM left out"),
    pytest.mark.timeout(vllm_env.BUILD_TIMEOUT),  # the first waits for .venv-vllm
]
LOGP_DIFFERENCE = "sampling/sampling_logp_difference/"
SYNCED_MAX_DIFFERENCE = 0.05


@pytest.fixture(scope="session")
def vllm_bin(request) -> Path:
    """.venv-vllm/bin, built in the background since the session started (``./dev vllm-env``, instant when its
    stamp is current)."""
    return vllm_env.ready(request.config)


@pytest.fixture(scope="session")
def user_cache(tmp_path_factory) -> Path:
    """One $XDG_CACHE_HOME for every engine of the session, as a user's runs share theirs: the first engine's
    compiled kernels serve the next ones."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(scope="session")
def vllm_model(tmp_path_factory) -> str:
    """The --for-vllm tiny model (head_dim 32), random weights: building it takes seconds, not minutes."""
    from trainer_core.commands.tiny_model import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-vllm"), pretrain=False, for_vllm=True))


def colocate(vllm_bin: Path, model: str, runs: Path, home: Path, cache: Path, steps: int, **env: str):
    home.mkdir(exist_ok=True)
    shm_before = shm_segments()
    result = subprocess.run(
        [
            str(vllm_bin / "grpo-tui"),
            "train",
            "--model",
            model,
            *PATTERN_FLAGS,
            "--lr",  # after PATTERN_FLAGS' own: the last one counts
            "0.01",
            # top-k off: TRL compares vLLM's processed log-probs (after top-k) with the trainer's full softmax
            "--rl-top-k",
            "0",
            "--use-vllm",
            "--vllm-mode",
            "colocate",
            "--max-steps",
            str(steps),
            "--runs-dir",
            str(runs),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(cache), "PYTHONUNBUFFERED": "1", **env},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert shm_segments() - shm_before == set()  # the engine's shared memory and semaphores went with the run
    run = only_run(runs)
    events = events_of(run)
    return run, [e for e in events if isinstance(e, Metrics)], [e for e in events if isinstance(e, HealthWarning)]


def test_colocate_trains_on_the_cpu_with_the_weights_synced(vllm_bin, vllm_model, user_cache, tmp_path):
    home = tmp_path / "home"
    run, metrics, warnings = colocate(vllm_bin, vllm_model, tmp_path / "runs", home, user_cache, steps=6)
    assert [m.step for m in metrics] == [1, 2, 3, 4, 5, 6]
    for m in metrics:
        differences = {k: v for k, v in m.values.items() if k.startswith(LOGP_DIFFERENCE)}
        assert differences and all(v <= SYNCED_MAX_DIFFERENCE for v in differences.values()), (m.step, differences)
    assert not [w for w in warnings if w.rule == "sampling_mismatch"]
    # the engine compiled into grpo-tui's cache, private, not vLLM's ~/.cache/vllm; its socket folder is gone
    compiled = user_cache / "grpo-tui" / "vllm" / "torch_compile_cache"
    assert compiled.is_dir() and not (home / ".cache" / "vllm").exists()
    assert (user_cache / "grpo-tui" / "vllm").stat().st_mode & 0o077 == 0
    assert not (run / "vllm" / "tmp").exists() or not any((run / "vllm" / "tmp").iterdir())


def test_colocate_without_the_sync_raises_sampling_mismatch(vllm_bin, vllm_model, user_cache, tmp_path):
    _, metrics, warnings = colocate(
        vllm_bin, vllm_model, tmp_path / "runs", tmp_path / "home", user_cache, steps=7, GRPO_TUI_VLLM_NO_SYNC="1"
    )
    means = [m.values[LOGP_DIFFERENCE + "mean"] for m in metrics]
    assert means[-1] > means[0] and means[-1] > 0.3, means
    assert [w for w in warnings if w.rule == "sampling_mismatch"], means


# -- the server's life ------------------------------------------------------------------------------------------
GENERATE = """
import json, sys
from trl.generation.vllm_client import VLLMClient
for url in sys.argv[1:]:
    out = VLLMClient(base_url=url, connection_timeout=60).generate(prompts=[[5, 6, 7]], n=2, max_tokens=4)
    print(json.dumps({"url": url, "completions": len(out["completion_ids"])}))
"""

# the held-out eval's server path (evaluation/engines.py): K samples per prompt, the eval's own seed, reproducible
EVAL_SERVED = """
import json, sys
from transformers import AutoTokenizer
from trl.generation.vllm_client import VLLMClient
from trainer_core.evaluation.engines import Sampling, VLLMEngine
model, url = sys.argv[1:]
engine = VLLMEngine(client=VLLMClient(base_url=url, connection_timeout=60))
tokenizer = AutoTokenizer.from_pretrained(model)
prompts = ["Write the letter a 3 times:", "Say hello:"]
sampling = Sampling(k=3, temperature=1.0, top_p=1.0, top_k=0, max_tokens=6, seed=7)
first, again = (engine.generate(None, tokenizer, prompts, sampling) for _ in range(2))
other = engine.generate(None, tokenizer, prompts, Sampling(**{**sampling.__dict__, "seed": 8}))
print(json.dumps({"completions": len(first), "reproducible": first == again, "seeded": other != first}))
"""


def shm_segments() -> set[str]:
    return {p.name for pattern in vllm_server.SEGMENTS for p in Path("/dev/shm").glob(pattern)}


def port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a next server binds: TIME_WAIT is no obstacle
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def launch_server(vllm_bin: Path, model: str, run: Path, cache: Path) -> tuple[vllm_server.RunningServer, int]:
    run.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = RunConfig(model=model, use_vllm=True, vllm_mode="server")
    cmd = vllm_server.server_command(config, port, [str(vllm_bin / "trl"), "vllm-serve"])
    env = {**os.environ, "HOME": str(run / "home"), "XDG_CACHE_HOME": str(cache)}
    return vllm_server.start(cmd, env, run / "vllm_server.log", port, run), port


def left_behind(server: vllm_server.RunningServer, port: int, shm_before: set[str]) -> list[str]:
    found = []
    session = [p.pid for p in psutil.process_iter() if _sid(p.pid) == server.process.pid]
    if session:
        found.append(f"processes of its session: {session}")
    if shm_segments() - shm_before:
        found.append(f"shared memory: {sorted(shm_segments() - shm_before)}")
    if server.tmp is not None and server.tmp.exists() and any(server.tmp.iterdir()):
        found.append(f"socket files: {sorted(p.name for p in server.tmp.iterdir())}")
    if not port_free(port):
        found.append(f"port {port} in use")
    return found


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def test_a_real_vllm_server_starts_serves_and_leaves_nothing_after_it_stops(vllm_bin, vllm_model, user_cache, tmp_path):
    """Two servers start side by side (one engine start's wait for both: a server's three processes start one
    after the other, and the second server's overlap the first's): the first is stopped gracefully (TERM); the
    second's main process is killed mid-run, which leaves its engine and workers, and the stop then KILLs its
    session at once (a force stop, no grace)."""
    shm_before = shm_segments()
    started = time.monotonic()
    servers = [launch_server(vllm_bin, vllm_model, tmp_path / name, user_cache) for name in ("graceful", "killed")]
    try:
        for server, _ in servers:
            vllm_server.wait_healthy(server, timeout=900)
        print(f"two engines up in {time.monotonic() - started:.1f}s", file=sys.stderr)
        for server, port in servers:
            assert _sid(server.process.pid) == server.process.pid  # its own session
            assert server.url == f"http://127.0.0.1:{port}"
        urls = [server.url for server, _ in servers]
        out = subprocess.run(
            [str(vllm_bin / "python"), "-c", GENERATE, *urls], capture_output=True, text=True, timeout=300
        )  # through TRL's client, one process for both (its imports take seconds)
        assert out.returncode == 0, out.stderr[-3000:]
        assert [json.loads(line) for line in out.stdout.splitlines()[-2:]] == [
            {"url": url, "completions": 2} for url in urls
        ]
        served = subprocess.run(
            [str(vllm_bin / "python"), "-c", EVAL_SERVED, vllm_model, urls[0]],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert served.returncode == 0, served.stderr[-3000:]
        assert json.loads(served.stdout.splitlines()[-1]) == {"completions": 6, "reproducible": True, "seeded": True}
        (graceful, graceful_port), (killed, killed_port) = servers
        os.kill(killed.process.pid, signal.SIGKILL)
        killed.process.wait()
        assert vllm_server.died(killed) == "the vLLM server was killed by signal 9"
        assert [p.pid for p in psutil.process_iter() if _sid(p.pid) == killed.process.pid]  # the engine stays
        t = time.monotonic()
        assert vllm_server.stop(graceful, grace=30) == []
        print(f"graceful stop in {time.monotonic() - t:.1f}s", file=sys.stderr)
        assert vllm_server.stop(killed, grace=0) == []
        assert left_behind(graceful, graceful_port, set()) == []
        assert left_behind(killed, killed_port, set()) == []
        assert shm_segments() - shm_before == set()
        # each engine compiled into grpo-tui's cache, not vLLM's ~/.cache/vllm of the server's home
        assert (user_cache / "grpo-tui" / "vllm" / "torch_compile_cache").is_dir()
        assert not [name for name in ("graceful", "killed") if (tmp_path / name / "home" / ".cache" / "vllm").exists()]
    finally:
        for server, _ in servers:
            vllm_server.stop(server, grace=0)


def test_a_server_that_is_not_ready_in_time_shows_its_log(vllm_bin, vllm_model, user_cache, tmp_path):
    server, _ = launch_server(vllm_bin, vllm_model, tmp_path / "run", user_cache)
    try:
        with pytest.raises(vllm_server.ServerError, match=r"not healthy .* after 3s") as info:
            vllm_server.wait_healthy(server, timeout=3)
        assert "last lines of vllm_server.log" in str(info.value)
    finally:
        vllm_server.stop(server, grace=5)
