"""Import-linter contract types for the two rules its built-in types cannot state.

``pyproject.toml`` loads them through ``contract_types``; ``lint-imports`` (run by ``./dev lint`` in CI) then
checks them with the built-in ones over one import graph. They live in tools/, beside the packages, so that
lint loads them without importing the tests; nothing here is shipped.

- ``allowed_imports`` is an allow-list where ``forbidden`` is a deny-list: the source modules may import
  their own package, the standard library and ``allowed_modules`` and nothing else (with ``checked_packages``
  set, only imports of those packages are judged). A module added to trainer_core's heavy side later is
  therefore out of bounds for the app without anyone editing a contract.
- ``acyclic_modules`` forbids import circles between modules (import-linter's ``acyclic_siblings`` looks only
  at siblings at each level, so it misses a package's ``__init__`` importing a child that imports it back).
"""

from __future__ import annotations

import sys

from importlinter import Contract, ContractCheck, fields, output


def _within(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _require_in_graph(graph, modules) -> None:
    """A contract over a module that is gone would pass without checking anything: refuse instead."""
    missing = [m for m in modules if m not in graph.modules]
    if missing:
        raise ValueError(f"Module {', '.join(map(repr, missing))} does not exist (is its __init__.py missing?).")


def _line_numbers(graph, importer: str, imported: str) -> str:
    details = graph.get_import_details(importer=importer, imported=imported)
    return ", ".join(f"l.{d['line_number']}: {d['line_contents']}" for d in details) or "l.?"


class AllowedImportsContract(Contract):
    """Modules under ``source_modules`` import only themselves, the stdlib and ``allowed_modules``."""

    type_name = "allowed_imports"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    allowed_modules = fields.ListField(subfield=fields.ModuleField())
    checked_packages = fields.ListField(subfield=fields.ModuleField(), required=False)

    def check(self, graph, verbose: bool) -> ContractCheck:
        sources = [m.name for m in self.source_modules]
        allowed = [m.name for m in self.allowed_modules]
        checked = [m.name for m in self.checked_packages or []]
        _require_in_graph(graph, sources)
        illegal = []
        for importer in sorted(m for m in graph.modules if _within(m, sources)):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if (
                    _within(imported, sources)
                    or _within(imported, allowed)
                    or imported.split(".")[0] in sys.stdlib_module_names
                    or (checked and not _within(imported, checked))
                ):
                    continue
                illegal.append((importer, imported, _line_numbers(graph, importer, imported)))
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal, "allowed": allowed})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error(f"Only these may be imported: {', '.join(check.metadata['allowed'])}.", bold=False)
        output.new_line()
        for importer, imported, lines in check.metadata["illegal"]:
            output.print_error(f"- {importer} -> {imported} ({lines})", bold=False)
            output.new_line()


class AcyclicModulesContract(Contract):
    """No module under ``packages`` reaches itself by following imports (function-level ones included)."""

    type_name = "acyclic_modules"

    packages = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph, verbose: bool) -> ContractCheck:
        roots = [m.name for m in self.packages]
        _require_in_graph(graph, roots)
        circles: set[frozenset[str]] = set()
        for module in sorted(m for m in graph.modules if _within(m, roots)):
            # a module's import circle: the modules it reaches that also reach it back
            both_ways = graph.find_downstream_modules(module) & graph.find_upstream_modules(module)
            if both_ways:
                circles.add(frozenset(both_ways | {module}))
        found = []
        for circle in sorted(circles, key=sorted):
            edges = [
                (a, b, _line_numbers(graph, a, b))
                for a in sorted(circle)
                for b in sorted(graph.find_modules_directly_imported_by(a) & circle)
            ]
            found.append((sorted(circle), edges))
        return ContractCheck(kept=not found, metadata={"circles": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for modules, edges in check.metadata["circles"]:
            output.print_error(f"Import circle among {', '.join(modules)}:", bold=False)
            output.new_line()
            for importer, imported, lines in edges:
                output.print_error(f"- {importer} -> {imported} ({lines})", bold=False)
                output.new_line()
