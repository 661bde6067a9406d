"""An import-linter contract the built-in types do not have: no import cycle between modules.

The layers contracts in pyproject.toml keep every import pointing down between layers; modules
that share a layer may still import each other. This contract forbids a cycle anywhere among
the modules of a package, whatever the kind of import (at the top, inside a function, under
``TYPE_CHECKING``): the graph of modules is a graph without circles, so each layer could be
split further without moving a line. Packages whose ``__init__`` only holds a docstring count
as no module at all.
"""

from __future__ import annotations

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

__all__ = ["AcyclicModulesContract"]


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child) & modules))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


class AcyclicModulesContract(Contract):
    """``containers``: the packages whose modules (at every depth) must not import in a circle."""

    type_name = "acyclic_modules"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        modules: set[str] = set()
        for container in self.containers:  # type: ignore[attr-defined]
            modules |= {container} | graph.find_descendants(container)
        cycles = _cycles(graph, modules)
        details = [[(a, b) for a in cycle for b in sorted(graph.find_modules_directly_imported_by(a)) if b in cycle]
                   for cycle in cycles]
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles, "imports": details})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle, imports in zip(check.metadata["cycles"], check.metadata["imports"]):
            output.print_error(f"These modules import each other in a circle: {', '.join(cycle)}")
            for importer, imported in imports:
                output.print_error(f"-   {importer} -> {imported}", bold=False)
            output.new_line()
