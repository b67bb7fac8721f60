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
    assert "lmms_eval_unify.integration.model" in graph and "lmms_eval_unify.model_adapters.baselines" in graph
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
        assert "lmms_eval_unify.integration.model" not in graph[module]


def test_adapters_take_core_names_only_from_the_adapter_module():
    """Adapters import the core through ``lmms_eval_unify.adapter`` (the adapter API) only; official-code backends
    (``model_adapters/official/``) run in the model's own environment, beside pins the rest of the core cannot
    import with, so they take nothing of the core but the worker's own side (``generation.worker_main``)."""
    modules = module_files()
    adapter_api, worker_side = "lmms_eval_unify.adapter", "lmms_eval_unify.generation.worker_main"
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


# ---- packages -----------------------------------------------------------------------------------------------
REGISTRY = "lmms_eval_unify.benchmarks"
"""The registry (``benchmarks/__init__.py``, ``benchmarks/parts.py``): the bottom layer, below every package that
asks it for a benchmark's part."""


def package_of(module: str) -> str:
    """The package a module belongs to in the package graph: its folder under ``lmms_eval_unify/``
    (``run``, ``reports``…), ``benchmarks/<name>`` for each benchmark (a plugin, above the core), ``benchmarks``
    for the registry, the module itself for a module at the root (``cli``, ``gate``…), ``model_adapters``."""
    parts = module.split(".")[1:]
    if not parts:
        return "lmms_eval_unify"
    if parts[0] == "benchmarks" and len(parts) > 1 and parts[1] in ENTRIES:
        return f"benchmarks/{parts[1]}"
    return parts[0]


def package_graph(graph: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """Package -> the packages it imports (lazy and TYPE_CHECKING imports included, as :func:`import_graph`).

    The registry's imports of the benchmark entries are dispatch, as an entry's of its parts: the registry hands
    out a benchmark's parts and uses nothing of them itself (:func:`test_the_registry_imports_only_its_entries`)."""
    graph = import_graph() if graph is None else graph
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = package_of(module)
        for target in targets:
            if module == REGISTRY and target in {entry.__name__ for entry in ENTRIES.values()}:
                continue
            packages.setdefault(source, set()).add(package_of(target))
        packages.setdefault(source, set())
    return {package: targets - {package} for package, targets in packages.items()}


def documented_layers() -> list[list[str]]:
    """The layers docs/architecture.md draws between its ``<!-- layers -->`` markers, top first; each line is
    ``N. <name>: package, package`` (``benchmarks/<name>`` stands for every benchmark)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("<!-- layers -->", 1)[1].split("<!-- /layers -->", 1)[0]
    layers = []
    for line in block.splitlines():
        if ":" not in line or not line.strip()[:1].isdigit():
            continue
        names = [name.strip(" `") for name in line.split(":", 1)[1].split(",")]
        benchmarks = [f"benchmarks/{b}" for b in ENTRIES] if "benchmarks/<name>" in names else []
        layers.append([name for name in names if name != "benchmarks/<name>"] + benchmarks)
    return layers


def test_package_cycles_are_found():
    graph = {
        "lmms_eval_unify.a.x": {"lmms_eval_unify.b.y"},
        "lmms_eval_unify.b.y": set(),
        "lmms_eval_unify.b.z": {"lmms_eval_unify.a.w"},
        "lmms_eval_unify.a.w": set(),
    }
    assert import_cycles(package_graph(graph)) == [["a", "b"]]


def test_no_import_cycle_between_our_packages():
    packages = package_graph()
    assert {"run", "integration", "reports", "benchmarks", "benchmarks/uni_mmmu", "adapter"} <= set(packages)
    cycles = import_cycles(packages)
    assert not cycles, "packages that import each other (directly or around a loop): " + "; ".join(
        " <-> ".join(cycle) for cycle in cycles
    )


def test_the_registry_imports_only_its_entries():
    """The registry is the bottom layer: any package may ask it for a benchmark's part, so importing it runs no
    module of ours but the benchmark entries, and an entry's own top-level imports are ``benchmarks.parts`` only
    (its parts and the types of its roll-up are imported inside functions or under ``TYPE_CHECKING``)."""
    graph, modules = import_graph(), module_files()
    registry = {m for m in graph if package_of(m) == "benchmarks"}
    assert registry == {REGISTRY, f"{REGISTRY}.parts"}
    entries = {entry.__name__ for entry in ENTRIES.values()}
    assert graph[REGISTRY] <= entries | {f"{REGISTRY}.parts"} and not graph[f"{REGISTRY}.parts"]
    for entry in entries:
        body = ast.parse(modules[entry].read_text()).body
        eager = [f"{n.module}.{a.name}" for n in body if isinstance(n, ast.ImportFrom) for a in n.names]
        eager += [a.name for n in body if isinstance(n, ast.Import) for a in n.names]
        ours = {_ours(name, modules) for name in eager} - {None}
        assert ours <= {f"{REGISTRY}.parts"}, f"{entry} imports {sorted(ours)} when the registry is imported"


def test_every_import_points_down_the_documented_layers():
    layers, packages = documented_layers(), package_graph()
    rank = {package: depth for depth, layer in enumerate(layers) for package in layer}
    listed = [package for layer in layers for package in layer]
    assert sorted(listed) == sorted(set(listed)) and set(listed) == set(packages), (
        f"docs/architecture.md's layers miss {sorted(set(packages) - set(listed))}, "
        f"list {sorted(set(listed) - set(packages))} that do not exist, or list a package twice"
    )
    upward = [f"{a} -> {b}" for a, targets in packages.items() for b in targets if rank[b] <= rank[a]]
    assert not upward, "imports that do not point to a lower layer: " + ", ".join(sorted(upward))
