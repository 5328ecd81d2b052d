"""The MCP server's two import contracts notice when one breaks, as test_import_contracts.py shows for the others.

``grpo_tui.mcp_server`` sits beside the CLI, over services and executors: it imports no CLI, app, screen, widget or
Textual, and nothing under it imports the server. Each contract is shown failing on an import planted in a copy of
the packages (the copy comes first on the path), and each failure names the planted module.
"""

from __future__ import annotations

import pytest

from .test_import_contracts import broken_contracts, copy, lint_imports, plant  # noqa: F401

SERVER_BESIDE_CLI = "The MCP server sits beside the CLI, over services and executors"
NOTHING_UNDER_IMPORTS_IT = "Services and executors never import the MCP server"


@pytest.mark.parametrize(
    ("where", "line", "named", "contract"),
    [
        (
            "grpo_tui/mcp_server/planted.py",
            "from grpo_tui.cli import common",
            "grpo_tui.mcp_server.planted -> grpo_tui.cli.common",
            SERVER_BESIDE_CLI,
        ),
        (
            "grpo_tui/mcp_server/read_tools.py",
            "import grpo_tui.screens.monitor",
            "grpo_tui.mcp_server.read_tools -> grpo_tui.screens.monitor",
            SERVER_BESIDE_CLI,
        ),
        (
            "grpo_tui/mcp_server/planted.py",
            "import textual",
            "grpo_tui.mcp_server.planted -> textual",
            SERVER_BESIDE_CLI,
        ),
        (
            "grpo_tui/services/catalog/planted.py",
            "from grpo_tui.mcp_server import schema",
            "grpo_tui.services.catalog.planted -> grpo_tui.mcp_server.schema",
            NOTHING_UNDER_IMPORTS_IT,
        ),
        (
            "grpo_tui/executors/planted.py",
            "import grpo_tui.mcp_server.runs",
            "grpo_tui.executors.planted -> grpo_tui.mcp_server.runs",
            NOTHING_UNDER_IMPORTS_IT,
        ),
    ],
    ids=[
        "server-imports-the-cli",
        "server-imports-a-screen",
        "server-imports-textual",
        "service-imports-the-server",
        "executor-imports-the-server",
    ],
)
def test_a_planted_import_breaks_an_mcp_contract(copy, where, line, named, contract):  # noqa: F811
    plant(copy / where, line)
    result = lint_imports(copy)
    assert result.returncode != 0
    assert any(name.startswith(contract) for name in broken_contracts(result)), result.stdout + result.stderr
    assert named in result.stdout, result.stdout
