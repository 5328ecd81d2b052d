"""The monitor of a rewound run: its charts draw the live history, the abandoned stretch dimmed beside it and the
rewind's step as a rule in the theme's warning colour; its warnings, evals and samples are the live history's. The runs list
marks the run with the number of times it went back."""

from __future__ import annotations

from rich.style import Style

from grpo_tui.app import make_app
from grpo_tui.widgets.completions import CompletionsTable
from grpo_tui.widgets.metric_chart import MetricChart
from grpo_tui.widgets.runs_table import RunsTable

from ..rewind_fixtures import FIRST_LEG, LAST_STEP, TO_STEP, make_rewound_run
from ..run_fixtures import make_finished_run
from .conftest import wait_until

RULE = "│"


def cells_in(chart: MetricChart, style: Style) -> list[tuple[int, str]]:
    """(row, text) of each plot segment drawn in ``style`` (its colour)."""
    found = []
    for y, strip in enumerate(chart._strips[:-1]):
        for segment in strip:
            if segment.style is not None and segment.style.color == style.color and segment.text.strip():
                found.append((y, segment.text))
    return found


async def test_the_kl_chart_draws_the_live_series_the_abandoned_stretch_dimmed_and_the_rewind(tmp_path):
    run = make_rewound_run(tmp_path / "runs")
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = pilot.app.screen
        chart = screen.query_one("#chart-kl", MetricChart)
        await wait_until(
            pilot,
            lambda: screen.status == "completed" and chart.abandoned and chart.has_data and RULE in chart.text,
            what="the kl chart with its abandoned stretch and the rewind",
        )
        series = screen.charts["kl"]
        assert (series.steps[0], series.end_step) == (1, LAST_STEP)  # the live history
        (stretch,) = chart.abandoned
        assert (stretch.steps[0], stretch.end_step) == (TO_STEP + 1, FIRST_LEG)
        assert chart.rewinds == (TO_STEP,)
        x0, x1 = chart.domain() or (0, 0)
        assert x0 == 1 and x1 >= FIRST_LEG  # the abandoned steps are on the axis
        styles = chart._styles()
        faint, rewind = cells_in(chart, styles["faint"]), cells_in(chart, styles["rewind"])
        assert faint, "the abandoned stretch is drawn in the faint style"
        assert rewind and all(set(text) == {RULE} for _, text in rewind), rewind
        assert styles["rewind"].color != styles["line"].color and styles["faint"].color != styles["line"].color
        # the KL explosion is in the abandoned stretch only: drawn faint, high above the live series
        top_faint = min(y for y, _ in faint)
        assert top_faint < 4 and top_faint < min(y for y, _ in cells_in(chart, styles["line"])) - 8, chart.text
        # the warning it fired and the eval of step 30 were abandoned too
        assert [w.rule for w in screen.warnings] == []
        assert sorted(screen.evals) == [0, 10, 20, LAST_STEP]
        # and so were the first leg's samples of steps past 20: the Completions tab has the second leg's
        table = screen.query_one("#samples", CompletionsTable)
        await wait_until(pilot, lambda: bool(table.samples), what="the samples")
        assert {s["completion"][:5] for s in table.samples} == {"leg 2"}
        assert sorted({s["step"] for s in table.samples}) == list(range(TO_STEP + 1, LAST_STEP + 1))


async def test_the_runs_list_marks_a_run_that_went_back(tmp_path):
    rewound = make_rewound_run(tmp_path / "runs")
    plain = make_finished_run(tmp_path / "runs", steps=12, with_warnings=False)
    app = make_app(tmp_path / "runs")
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.screen.query_one(RunsTable)
        await wait_until(pilot, lambda: table.row_count == 2, what="both runs listed")
        assert str(table.get_cell(rewound.name, "step")) == f"{LAST_STEP}/{FIRST_LEG}↺1"
        assert str(table.get_cell(plain.name, "step")) == "12/12"
