"""``grpo-tui rollback --host NAME``: a finished run on a host (the real sshd of tests/sshd.py) goes back to a
checkpoint and on, the command handed to the host's own grpo-tui with every word quoted; the rewind is recorded
there. One 4-step run of the tiny model is trained on the host; each test rolls back its own copy of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers import events_of, wait_for
from tests.remote_hosts import remote, sshd  # noqa: F401
from trainer_core.contract.run.events import Metrics, Rewound, RunStarted

pytestmark = pytest.mark.slow

FIRST_LR, NEW_LR = 1e-5, 3e-5


def status_of(folder: Path) -> str | None:
    return json.loads((folder / "state.json").read_text()).get("status")


def ended(folder: Path) -> str | None:
    status = status_of(folder)
    return status if status in ("completed", "stopped", "failed") else None


@pytest.fixture(scope="module")
def finished_on_host(remote, tiny_model) -> Path:  # noqa: F811
    """A completed 4-step run launched on gpubox, with checkpoints at 2 and 4, kept aside as the tests' template."""
    run_id = remote.launch(
        tiny_model, "--rl-max-new-tokens", "8", "--max-steps", "4", "--save-steps", "2", "--lr", str(FIRST_LR)
    )
    folder = remote.run_folder(run_id)
    assert wait_for(lambda: ended(folder), 300, 0.5, what="the run on gpubox to end") == "completed", (
        folder / "trainer.log"
    ).read_text()
    wait_for(lambda: not remote.processes_of(folder), 30, 0.2, what="the run's processes to exit")
    template = remote.dir / "template" / run_id
    shutil.move(folder, template)
    return template


def copy_to(remote, template: Path, host: str) -> Path:  # noqa: F811
    return Path(shutil.copytree(template, remote.run_folder(template.name, host)))


def rewinds(folder: Path) -> list[Rewound]:
    return [e for e in events_of(folder) if isinstance(e, Rewound)]


def test_rollback_on_a_host_goes_on_from_the_checkpoint_with_the_change(remote, finished_on_host):  # noqa: F811
    folder = copy_to(remote, finished_on_host, "gpubox")
    result = remote.cli(
        "rollback", folder.name[:15], "--host", "gpubox", "--to", "2", "--set", f"lr={NEW_LR}",
        "--reason", "kl spike after step 2", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["run_id"] == folder.name
    assert "from checkpoints/checkpoint-2 to step 4; steps 3-4 are trained again" in result.stderr
    assert wait_for(lambda: ended(folder), 300, 0.5, what="the rolled-back run to end") == "completed", (
        folder / "trainer.log"
    ).read_text()

    [rewind] = rewinds(folder)
    assert (rewind.from_step, rewind.to_step, rewind.checkpoint, str(rewind.by), rewind.reason) == (
        4,
        2,
        "checkpoint-2",
        "user",
        "kl spike after step 2",
    )
    assert rewind.changes == {"lr": {"from": FIRST_LR, "to": NEW_LR}} and rewind.revision == 1
    assert yaml.safe_load((folder / "config.yaml").read_text())["lr"] == NEW_LR
    events = events_of(folder)
    assert [e.step for e in events[events.index(rewind) :] if isinstance(e, Metrics)] == [3, 4]
    assert sum(isinstance(e, RunStarted) for e in events) == 2
    listed = json.loads(remote.cli("runs", "--host", "gpubox", "--json").stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [(folder.name, "completed")]


HOSTILE_REASON = "$(touch {m}1) ; touch {m}2 `touch {m}3` 'x\" \\n\n|| touch {m}4 &"


def test_a_hostile_reason_reaches_the_host_as_data(remote, finished_on_host, tmp_path):  # noqa: F811
    folder = copy_to(remote, finished_on_host, "otherbox")
    marker = tmp_path / "pwned"
    reason = HOSTILE_REASON.format(m=marker)
    result = remote.cli("rollback", folder.name, "--host", "otherbox", "--to", "2", "--reason", reason)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"rolled back run {folder.name} to 2" in result.stdout
    assert wait_for(lambda: ended(folder), 300, 0.5, what="the rolled-back run to end") == "completed"
    [rewind] = rewinds(folder)
    assert rewind.reason == reason and rewind.changes == {} and rewind.to_step == 2
    assert not list(tmp_path.glob("pwned*")), "a shell ran part of the reason"
