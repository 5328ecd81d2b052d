"""The one loader of the user's code (trainer_core/environment/user_code.py) and the one grammar that names it
(trainer_core/contract/config/code_refs.py): a file or a dotted module, a missing name, a crash inside the user's
module (shown with the user's frames only), one module that edits ``sys.path``, and reward functions, tools and
eval metrics accepting and refusing the same specs."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainer_core.contract.config.checks import reward_func_kind
from trainer_core.contract.config.code_refs import parse_code_ref
from trainer_core.contract.config.eval_settings import eval_metric_kind
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.config.tool_specs import parse_tool_spec
from trainer_core.environment.user_code import (
    UserCodeError,
    load_class,
    load_function,
    load_functions,
    user_traceback,
)

ROOT = Path(__file__).resolve().parents[2]
FIX = "Check reward_funcs."
REWARDS = (
    "from helper import SCALE\n\n\ndef score(prompts, completions, **kw):\n    return [SCALE] * len(completions)\n"
)


@pytest.fixture(autouse=True)
def isolated(monkeypatch):
    """Each test's own sys.path, and the modules it imported gone afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def package(root: Path, name: str, source: str) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    (root / name / "rewards.py").write_text(source)


def test_a_file_is_imported_with_its_folder_on_the_path_once(tmp_path):
    (tmp_path / "helper.py").write_text("SCALE = 0.5\n")  # a neighbour the file imports
    (tmp_path / "my_rewards.py").write_text(REWARDS)
    func = load_function(f"{tmp_path / 'my_rewards.py'}:score", "reward function", FIX)
    assert func(prompts=["p"], completions=["a", "b"]) == [0.5, 0.5]
    assert sys.path[0] == str(tmp_path)
    # a tool or a second reward from the same file: the module is not run again
    (tool,) = load_functions(parse_code_ref(f"{tmp_path / 'my_rewards.py'}:score"), "tools entry", FIX)
    assert tool is func


def test_a_dotted_module_is_imported_from_the_current_folder(tmp_path, monkeypatch):
    package(tmp_path, "ucpkg_dotted", "def score(prompts, completions, **kw):\n    return [1.0] * len(completions)\n")
    monkeypatch.chdir(tmp_path)
    for spec in ("ucpkg_dotted.rewards.score", "ucpkg_dotted.rewards:score"):
        assert load_function(spec, "reward function", FIX)(prompts=[], completions=["a"]) == [1.0]
    assert sys.path[0] == str(tmp_path)


def test_a_missing_function_names_the_file_the_ones_there_and_the_fix(tmp_path):
    (tmp_path / "rw.py").write_text("import os\n\n\ndef score(): ...\n\n\ndef _private(): ...\n")
    spec = f"{tmp_path / 'rw.py'}:nope"
    with pytest.raises(UserCodeError) as caught:
        load_function(spec, "reward function", FIX)
    assert str(caught.value) == (
        f"reward function '{spec}': {tmp_path / 'rw.py'} has no function 'nope'. Functions defined there: score. {FIX}"
    )
    assert caught.value.user_traceback is None


def test_a_missing_file_or_module_is_named_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        UserCodeError, match=r"reward function 'gone\.py:f' not found \(no file at .*gone\.py\)\. Check"
    ):
        load_function("gone.py:f", "reward function", FIX)
    with pytest.raises(UserCodeError) as caught:
        load_function("uc_no_such_pkg.rewards.f", "reward function", FIX)
    assert (
        f"not found (no module named 'uc_no_such_pkg' on the path; the current folder {tmp_path} is searched)"
        in str(caught.value)
    )
    assert str(caught.value).endswith(FIX) and caught.value.user_traceback is None
    with pytest.raises(UserCodeError, match="names no single function"):
        load_function("rw.py:a,b", "reward function", FIX)


def test_a_crash_in_the_users_module_shows_the_users_frames_only(tmp_path):
    (tmp_path / "crashing.py").write_text(
        "def load_table():\n    raise ValueError('broken on purpose')\n\n\nTABLE = load_table()\n"
    )
    with pytest.raises(UserCodeError) as caught:
        load_function(f"{tmp_path / 'crashing.py'}:score", "reward function", FIX)
    assert "importing reward function" in str(caught.value)
    assert "raised ValueError: broken on purpose" in str(caught.value)
    shown = user_traceback(caught.value)
    assert shown is not None and shown.startswith("Traceback (most recent call last):")
    assert "crashing.py" in shown and "in load_table" in shown and "ValueError: broken on purpose" in shown
    assert "trainer_core" not in shown and "<frozen" not in shown
    assert "grpo_user_crashing" not in sys.modules  # a failed import leaves no half-made module behind


def test_an_import_missing_inside_the_users_module_is_a_crash_not_a_missing_module(tmp_path, monkeypatch):
    package(tmp_path, "ucpkg_crash", "import uc_missing_dependency\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserCodeError) as caught:
        load_function("ucpkg_crash.rewards.score", "reward function", FIX)
    assert "raised ModuleNotFoundError: No module named 'uc_missing_dependency'" in str(caught.value)
    shown = user_traceback(caught.value)
    assert shown is not None and "rewards.py" in shown


def test_an_environment_class_that_is_not_there_lists_the_classes(tmp_path):
    (tmp_path / "envs_uc.py").write_text("class Good: ...\n\n\nclass _Hidden: ...\n\n\ndef rows(): ...\n")
    where = str(tmp_path / "envs_uc.py")
    assert load_class(where, "Good", "Check --rl-env-module.").__name__ == "Good"
    for name in ("Nope", "rows"):
        with pytest.raises(UserCodeError) as caught:
            load_class(where, name, "Check --rl-env-module.")
        assert f"class '{name}' not found in environment module '{where}'. Classes defined there: Good." in str(
            caught.value
        )
        assert "--rl-env-class" in str(caught.value)


_CHANGES = {"insert", "append", "extend", "remove", "pop", "clear", "__setitem__", "__delitem__", "__iadd__"}


def _edits_sys_path(tree: ast.AST) -> bool:
    def is_sys_path(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _CHANGES and is_sys_path(node.func.value):
                return True
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign))
            else node.targets
            if isinstance(node, ast.Delete)
            else []
        )
        for target in targets:
            if is_sys_path(target) or (isinstance(target, ast.Subscript) and is_sys_path(target.value)):
                return True
        if isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            return True  # `from sys import path`: then path.insert(...) goes unseen
    return False


def test_only_the_loader_changes_sys_path():
    editing = sorted(
        str(path.relative_to(ROOT))
        for package_dir in ("grpo_tui", "trainer_core")
        for path in (ROOT / package_dir).rglob("*.py")
        if _edits_sys_path(ast.parse(path.read_text(), str(path)))
    )
    assert editing == ["trainer_core/environment/user_code.py"]


def test_the_scan_sees_each_way_of_changing_sys_path():
    for source in (
        "import sys\nsys.path.insert(0, 'x')",
        "import sys\nsys.path.append('x')",
        "import sys\nsys.path[:0] = ['x']",
        "import sys\nsys.path = ['x']",
        "import sys\nsys.path += ['x']",
        "from sys import path",
    ):
        assert _edits_sys_path(ast.parse(source)), source
    assert not _edits_sys_path(ast.parse("import sys\nfound = 'x' in sys.path"))


SINGLE = [
    ("rewards.py:score", True),
    ("lib/rewards.py:score", True),
    ("my rewards.py:score", True),
    ("pkg.mod.score", True),
    ("pkg.mod:score", True),
    ("pkg:score", True),
    ("score", False),
    ("rewards.py:", False),
    ("rewards.py:a b", False),
    ("data/rewards.txt:score", False),
    ("lib/rewards:score", False),
    ("1pkg.score", False),
    ("pkg.mod.", False),
    (":score", False),
    ("pkg..mod.score", False),
    ("", False),
]


@pytest.mark.parametrize(("spec", "ok"), SINGLE)
def test_rewards_tools_and_metrics_accept_and_refuse_the_same_specs(spec, ok):
    assert (reward_func_kind(spec) is not None) is ok
    assert (parse_tool_spec(spec) is not None) is ok
    assert (eval_metric_kind(spec) is not None) is ok
    reward_run = RunConfig(model="m", dataset="d.jsonl", reward_funcs={spec: 1.0})
    tool_run = RunConfig(model="m", rl_env_module="e.py", rl_env_class="E", tools=[spec])
    assert (not [p for p in reward_run.problems() if p.field == "reward_funcs"]) is ok
    assert (not [p for p in tool_run.problems() if p.field == "tools"]) is ok


def test_several_functions_are_a_tools_entry_and_a_reward_needs_one_entry_each():
    spec = "lib/rewards.py:a,b"
    tool = parse_tool_spec(spec)
    assert tool is not None and (tool.file, tool.names) == ("lib/rewards.py", ("a", "b"))
    assert reward_func_kind(spec) is None
    (problem,) = [p for p in RunConfig(model="m", dataset="d.jsonl", reward_funcs={spec: 1.0}).problems()]
    assert problem.field == "reward_funcs"
    assert "each its own entry: lib/rewards.py:a, lib/rewards.py:b" in str(problem)


@given(st.text(alphabet="ab1_.:/, py", max_size=14))
def test_one_grammar_decides_for_every_setting(text):
    ref = parse_code_ref(text)
    assert parse_tool_spec(text) == ref
    single = ref is not None and len(ref.names) == 1
    if reward_func_kind(text) != "builtin":
        assert (reward_func_kind(text) is not None) is single
    assert (eval_metric_kind(text) is not None) is single
    if ref is not None:
        assert all(n.isidentifier() for n in ref.names) and bool(ref.file) != bool(ref.module)
