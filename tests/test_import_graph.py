"""No import cycle between modules of the package (``lmms_eval_unify/`` and ``model_adapters/``).

The graph is read statically: every ``import`` statement of a module is an edge, wherever it is written —
at the top, inside a function (a lazy import) or under ``if TYPE_CHECKING:``. An import of
``package.module.name`` points at the deepest module of ours it names.
"""

from __future__ import annotations

import ast
from pathlib import Path

from lmms_eval_unify.benchmarks import ENTRIES

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "lmms_eval_unify": ROOT / "lmms_eval_unify",
    "lmms_eval_unify.model_adapters": ROOT / "model_adapters",
}
"""Import prefix -> folder (``model_adapters/`` is installed as ``lmms_eval_unify.model_adapters``)."""


def module_files() -> dict[str, Path]:
    """Every module of ours by its import name (a package by its ``__init__.py``)."""
    modules = {}
    for prefix, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((prefix, *parts))] = path
    return modules


def _ours(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of ours that ``name`` (a module, or a name inside one) lies in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(module: str, path: Path) -> list[str]:
    """Fully qualified names of everything ``module`` imports, relative imports resolved."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, but for a benchmark entry's imports of its own parts.

    A benchmark's entry (``benchmarks/<b>/__init__.py``) imports each of its parts inside the zero-arg function
    the registry calls: that is dispatch, the one way horizontal code reaches a benchmark's modules, not a
    dependency of the entry, and those modules may use horizontal code (which may use the registry)."""
    modules = module_files()
    graph = {}
    for module, path in modules.items():
        targets = (_ours(name, modules) for name in _imported_names(module, path))
        graph[module] = {target for target in targets if target and target != module}
    for entry in ENTRIES.values():
        graph[entry.__name__] = {t for t in graph[entry.__name__] if not t.startswith(f"{entry.__name__}.")}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_lazy_and_type_checking_imports_are_edges(tmp_path):
    path = tmp_path / "y.py"
    path.write_text(
        "import os\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .z import Z\n\n\n"
        "def f():\n    from ..w import v\n"
    )
    names = _imported_names("lmms_eval_unify.x.y", path)
    assert {"os", "lmms_eval_unify.x.z.Z", "lmms_eval_unify.w.v"} <= set(names)
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_between_our_modules():
    graph = import_graph()
    assert "lmms_eval_unify.generation.model" in graph and "lmms_eval_unify.model_adapters.baselines" in graph
    cycles = import_cycles(graph)
    assert not cycles, "modules that import each other (directly or around a loop): " + "; ".join(
        " <-> ".join(cycle) for cycle in cycles
    )


def test_a_benchmark_entry_imports_its_parts_only_inside_the_functions_the_registry_calls():
    modules = module_files()
    for entry in ENTRIES.values():
        top_level = [n for n in ast.parse(Path(entry.__file__).read_text()).body if isinstance(n, ast.ImportFrom)]
        imported = {f"{n.module}.{alias.name}" for n in top_level for alias in n.names}
        parts = {module for module in modules if module.startswith(f"{entry.__name__}.")}
        assert not {_ours(name, modules) for name in imported} & parts, f"{entry.__name__} imports a part eagerly"


def test_protocols_and_the_engine_depend_on_the_primitives_contract_not_on_the_model():
    graph = import_graph()
    for module in ("lmms_eval_unify.generation.protocols", "lmms_eval_unify.generation.engine"):
        assert "lmms_eval_unify.generation.primitives" in graph[module]
        assert "lmms_eval_unify.generation.model" not in graph[module]


def test_adapters_take_core_names_only_from_the_adapter_module():
    """Adapters import the core through ``generation.adapter`` only; official-code backends
    (``model_adapters/official/``) run in the model's own environment, beside pins the rest of the core cannot
    import with, so they take nothing of the core but the worker's own side (``generation.worker_main``)."""
    modules = module_files()
    adapter_api, worker_side = "lmms_eval_unify.generation.adapter", "lmms_eval_unify.generation.worker_main"
    for module, path in modules.items():
        if not module.startswith("lmms_eval_unify.model_adapters."):
            continue
        core = {_ours(name, modules) for name in _imported_names(module, path)} - {None}
        allowed = {worker_side} if module.startswith("lmms_eval_unify.model_adapters.official.") else {adapter_api}
        core = {name for name in core if not name.startswith("lmms_eval_unify.model_adapters")}
        assert core <= allowed, f"{path.name} imports {sorted(core - allowed)}"


def test_the_worker_side_imports_nothing_of_the_package():
    """``worker_main`` runs in a model's environment (transformers 4.x, huggingface-hub < 1): it must not pull in
    the plugin's modules, which need the evaluator's versions."""
    modules = module_files()
    module = "lmms_eval_unify.generation.worker_main"
    assert {_ours(name, modules) for name in _imported_names(module, modules[module])} <= {None, module}
