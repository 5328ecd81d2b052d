"""The two braille charts share one base, and the two screens of charts one set of controls: written once.

``MetricChart`` (the monitor) and ``OverlayChart`` (the compare screen) subclass ``ChartBase``; ``ChartGrid``
and ``CompareScreen`` use ``ChartControls``. What both of a pair define must be one of the hooks its base
declares (a method that raises ``NotImplementedError`` there) or an entry point whose arguments differ
(``show``): anything else both wrote belongs in the base. Neither may redefine what the base implements.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from grpo_tui.screens.compare import CompareScreen
from grpo_tui.widgets.chart_base import ChartBase
from grpo_tui.widgets.chart_grid import ChartControls, ChartGrid
from grpo_tui.widgets.metric_chart import MetricChart
from grpo_tui.widgets.overlay_chart import OverlayChart

# defined by both subclasses on purpose: constructors, and entry points that take different things
OWN = {"__init__", "show", "compose", "extra_key"}
PAIRS = [(ChartBase, MetricChart, OverlayChart), (ChartControls, ChartGrid, CompareScreen)]


def defined(cls: type) -> set[str]:
    """The names a class's own body defines: methods, properties, and aliases of functions."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0]
    assert isinstance(body, ast.ClassDef)
    names = set()
    for node in body.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):  # action_x = Base.method
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def hooks(cls: type) -> set[str]:
    """The methods ``cls`` declares for its subclasses to write: their body raises NotImplementedError."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0]
    assert isinstance(body, ast.ClassDef)
    return {
        node.name
        for node in body.body
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(statement, ast.Raise)
            and isinstance(statement.exc, ast.Name)
            and statement.exc.id == "NotImplementedError"
            for statement in node.body
        )
    }


@pytest.mark.parametrize(("base", "one", "other"), PAIRS, ids=["charts", "controls"])
def test_both_subclass_the_shared_base(base, one, other):
    assert issubclass(one, base) and issubclass(other, base)
    assert hooks(base), "the base declares what its subclasses write"


@pytest.mark.parametrize(("base", "one", "other"), PAIRS, ids=["charts", "controls"])
def test_nothing_is_written_in_both_but_the_bases_hooks(base, one, other):
    both = defined(one) & defined(other)
    assert both - hooks(base) - OWN == set(), "written twice: move it into the base"


@pytest.mark.parametrize(("base", "one", "other"), PAIRS, ids=["charts", "controls"])
def test_neither_redefines_what_the_base_implements(base, one, other):
    implemented = defined(base) - hooks(base)
    assert implemented, "the base holds shared code"
    for cls in (one, other):
        assert defined(cls) & implemented - OWN == set(), f"{cls.__name__} redefines the base's code"


def test_every_hook_is_written_by_each_subclass():
    for cls in (MetricChart, OverlayChart):
        assert hooks(ChartBase) <= defined(cls), f"{cls.__name__} lacks {hooks(ChartBase) - defined(cls)}"
    for cls in (ChartGrid, CompareScreen):
        assert hooks(ChartControls) <= defined(cls), f"{cls.__name__} lacks {hooks(ChartControls) - defined(cls)}"
