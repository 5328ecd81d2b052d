"""config/model_source.py reads a model name as transformers and huggingface_hub do, without importing them: the
Hub id rules are huggingface_hub's ``validate_repo_id`` (checked against it here, in the test process, which may
import it), and the offline cache is the folder huggingface_hub resolves from the same variables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainer_core.contract.config.model_source import hub_cache, hub_id_problem, hub_offline, model_problem

ASCII = st.text(alphabet="abAB09-_./ ~@", min_size=1, max_size=12)


@given(ASCII)
def test_a_hub_id_is_what_huggingface_hub_accepts(name):
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
        theirs = True
    except HFValidationError:
        theirs = False
    assert (hub_id_problem(name) is None) == theirs, (name, hub_id_problem(name))


@given(st.text(max_size=20))
def test_no_text_breaks_the_check(name):
    problem = model_problem(name, {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": "/nonexistent/hub"})
    assert problem is None or problem.startswith(("model ", "model must"))


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"HF_HUB_CACHE": "/a/hub", "HF_HOME": "/b"}, "/a/hub"),
        ({"HUGGINGFACE_HUB_CACHE": "/c/hub", "HF_HOME": "/b"}, "/c/hub"),
        ({"HF_HOME": "/b", "XDG_CACHE_HOME": "/x"}, "/b/hub"),
        ({"XDG_CACHE_HOME": "/x"}, "/x/huggingface/hub"),
    ],
)
def test_the_cache_folder_is_the_one_huggingface_hub_resolves(env, expected):
    assert str(hub_cache(env)) == expected


def test_offline_is_read_as_huggingface_hub_reads_it():
    assert hub_offline({"HF_HUB_OFFLINE": "1"}) == "HF_HUB_OFFLINE=1"
    assert hub_offline({"TRANSFORMERS_OFFLINE": "yes"}) == "TRANSFORMERS_OFFLINE=yes"
    assert hub_offline({"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "1"}) is None  # the first one set decides
    assert hub_offline({}) is None


def test_offline_a_hub_id_cached_in_another_folder_than_the_one_read_is_named(tmp_path):
    home = tmp_path / "home-cache"
    snapshot = home / "huggingface" / "hub" / "models--org--tiny" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    env = {"HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(home), "HF_HUB_CACHE": str(tmp_path / "elsewhere")}
    problem = model_problem("org/tiny", env)
    assert problem is not None and f"it is cached in {home / 'huggingface' / 'hub'}" in problem
    assert model_problem("org/tiny", {k: v for k, v in env.items() if k != "HF_HUB_CACHE"}) is None


def test_a_partial_download_is_said(tmp_path):
    (tmp_path / "models--org--tiny" / "snapshots" / "abc").mkdir(parents=True)
    problem = model_problem("org/tiny", {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)})
    assert problem is not None and "a partial download without config.json" in problem
