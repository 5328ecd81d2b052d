"""A model this machine cannot load is refused before anything is written: the real ``grpo-tui train``, ``launch``
(here, as a Slurm job, ``--dry-run``) and ``inspect`` exit 2 with one message that names the model, says what was
found and how to fix it, and leave no run or inspection folder; a config file's ``model`` is checked the same way.
A run on a host has its model checked there, by the host's grpo-tui, with the host's environment.

Before config/model_source.py, ``train --model /tmp/x/no-such-model`` said the path "is not a local model folder (a
Hub id is downloaded at start)", created a run folder, and failed with transformers' traceback (exit 1)."""

from __future__ import annotations

import json

import pytest

from tests.remote_hosts import remote, sshd  # noqa: F401  (the fixtures, for the host's case)

from ..helpers import PATTERN_FLAGS, cli

FIRST_TRY = "grpo-tui tiny-model DIR"


def written(tmp_path) -> list[str]:
    """Every file and folder under the runs dir (inspections included): none may be left by a refusal."""
    runs = tmp_path / "runs"
    return sorted(str(p.relative_to(runs)) for p in runs.rglob("*")) if runs.exists() else []


def refused(done, *pieces: str) -> str:
    """The one error of a refusal (exit 2, no traceback), holding every piece."""
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out and "OSError" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out
    for piece in pieces:
        assert piece in errors[0], (piece, errors[0])
    return errors[0]


@pytest.mark.parametrize(
    "command",
    [["train"], ["launch"], ["launch", "--slurm", "--partition", "debug"], ["inspect", "--samples", "4"]],
    ids=["train", "launch", "slurm", "inspect"],
)
def test_a_model_path_that_does_not_exist_is_refused_before_anything_is_written(command, tmp_path):
    model = str(tmp_path / "x" / "no-such-model")
    done = cli(*command, "--model", model, *PATTERN_FLAGS, "--runs-dir", str(tmp_path / "runs"))
    refused(done, f"model {model!r} does not exist on this machine", "nothing is at that path", FIRST_TRY)
    assert "is not a local model folder" not in done.stderr  # the disk note of a Hub id: never for a path
    assert written(tmp_path) == []


def test_a_config_files_model_is_checked_and_the_dry_run_names_it(tmp_path):
    config = tmp_path / "demo.yaml"
    config.write_text(f"model: {tmp_path / 'x' / 'no-such-model'}\n")
    done = cli("train", "--config", str(config), *PATTERN_FLAGS, "--runs-dir", str(tmp_path / "runs"))
    refused(done, "does not exist on this machine", FIRST_TRY)
    dry = cli("launch", "--dry-run", "--json", "--config", str(config), *PATTERN_FLAGS)
    assert dry.returncode == 2, dry.stdout + dry.stderr
    problems = json.loads(dry.stdout)["problems"]
    assert [p["field"] for p in problems] == ["model"] and FIRST_TRY in problems[0]["message"]
    assert written(tmp_path) == []


def test_each_kind_of_model_that_cannot_load_is_named_with_what_was_found(tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    (empty / "weights.safetensors").write_bytes(b"")
    run = tmp_path / "a-run"  # a run folder given for its model: its final model is named
    (run / "final").mkdir(parents=True)
    (run / "final" / "config.json").write_text("{}")
    (run / "events.jsonl").write_text("")
    file = tmp_path / "model.yaml"
    file.write_text("")
    near = tmp_path / "tiny-model"
    near.mkdir()
    (near / "config.json").write_text("{}")
    cases = {
        str(empty): ("is a folder without config.json", "weights.safetensors"),
        str(run): ("is a folder without config.json", f"final/ does: pass --model {run / 'final'}"),
        str(file): ("is a file, not a model folder",),
        str(tmp_path / "tiny-modle"): ("does not exist", f"did you mean {str(near)!r}?"),
        "org/name/extra": ("is neither a folder on this machine", "nor a Hub model id", "at most one '/'"),
        "my model": ("nor a Hub model id", "letters, digits"),
    }
    for model, pieces in cases.items():
        done = cli("launch", "--model", model, *PATTERN_FLAGS, "--runs-dir", str(tmp_path / "runs"))
        refused(done, f"model {model!r}", *pieces, FIRST_TRY)
    assert written(tmp_path) == []


def test_offline_a_hub_id_must_be_in_the_local_cache(tmp_path):
    offline = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hf" / "hub")}
    args = ("launch", "--dry-run", *PATTERN_FLAGS, "--runs-dir", str(tmp_path / "runs"))
    done = cli(*args, "--model", "org/tiny", env=offline)
    refused(
        done,
        "model 'org/tiny' is a Hub id and the Hub is offline here (HF_HUB_OFFLINE=1)",
        f"no models--org--tiny/snapshots/*/config.json under {tmp_path / 'hf' / 'hub'}",
        "hf download org/tiny",
        FIRST_TRY,
    )
    snapshot = tmp_path / "hf" / "hub" / "models--org--tiny" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    ok = cli(*args, "--model", "org/tiny", env=offline)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: the run can start here"), ok.stdout + ok.stderr
    online = cli(*args, "--model", "org/not-cached", env={**offline, "HF_HUB_OFFLINE": "0"})
    assert online.returncode == 0, online.stdout + online.stderr  # online, a Hub id is downloaded at start
    assert written(tmp_path) == []


@pytest.mark.slow
def test_a_hosts_model_is_checked_on_the_host_with_its_environment(remote):  # noqa: F811
    # this side is online (a Hub id passes here); the host's grpo-tui runs with HF_HUB_OFFLINE=1 (tests/remote_hosts.py)
    done = remote.cli(
        "launch", "--host", "gpubox", "--model", "org/not-cached", *PATTERN_FLAGS, env={"HF_HUB_OFFLINE": ""}
    )
    refused(done, "model 'org/not-cached' is a Hub id and the Hub is offline here (HF_HUB_OFFLINE=1)")
    assert not (remote.runs / "gpubox").exists() or not any((remote.runs / "gpubox").iterdir())
