"""docs/architecture.md draws the layout the code has: every product folder is named there and says what it owns.

A folder added without a line in the map, or a package without a docstring, fails here; so does a module left
at the top of ``trainer_core/`` or a ``services/`` grown past its few top-level modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
PACKAGES = sorted(
    p.parent for top in ("grpo_tui", "trainer_core") for p in (ROOT / top).rglob("__init__.py") if p.parent.name != top
)


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_product_folder_is_in_the_architecture_map_and_says_what_it_owns(folder: Path):
    assert f"`{folder.name}/`" in DOC, f"docs/architecture.md does not name {folder.relative_to(ROOT)}/"
    docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
    assert docstring and len(docstring.split()) >= 12, f"{folder.relative_to(ROOT)}/__init__.py says not what it owns"


def test_the_trainer_has_no_module_at_its_top_but_its_entry_points():
    assert sorted(p.name for p in (ROOT / "trainer_core").glob("*.py")) == ["__init__.py", "__main__.py"]


def test_the_services_keep_only_a_handful_of_modules_at_their_top_each_named_in_the_map():
    top = sorted(p.name for p in (ROOT / "grpo_tui" / "services").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= 3, top
    for name in top:
        assert f"`{name}`" in DOC, f"docs/architecture.md does not say why services/{name} stays at the top"
