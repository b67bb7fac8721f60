"""Package layout: the repository keeps top-level ``tasks/`` and ``model_adapters/`` folders, installed
under the ``lmms_eval_unify`` namespace so no generic top-level import names are created."""

from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

GUARD_PTH = "lmms_eval_unify_guard.pth"
"""Runs ``lmms_eval_unify.integration.entry_guard`` at interpreter start (see that module); shipped at site-packages' root."""

MAPPED = {"tasks": "lmms_eval_unify.tasks", "model_adapters": "lmms_eval_unify.model_adapters"}

EXCLUDE = ["*__pycache__*", "*.egg-info*"]

packages = find_namespace_packages(include=["lmms_eval_unify", "lmms_eval_unify.*"], exclude=EXCLUDE)
for folder, namespace in MAPPED.items():
    found = find_namespace_packages(include=[folder, f"{folder}.*"], exclude=EXCLUDE)
    packages += [namespace + name[len(folder) :] for name in found]


class BuildWithGuard(build_py):
    """``build_py`` that also places the guard ``.pth`` at the root of the wheel (regular and editable)."""

    def run(self) -> None:
        super().run()
        self.copy_file(GUARD_PTH, str(Path(self.build_lib) / GUARD_PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / GUARD_PTH)]


class GuardedStrategy:
    """An editable-install strategy that also writes the guard ``.pth`` into the wheel."""

    def __init__(self, strategy) -> None:  # noqa: ANN001 - a setuptools-internal strategy object
        self.strategy = strategy

    def __call__(self, wheel, files, mapping) -> None:  # noqa: ANN001
        self.strategy(wheel, files, mapping)
        wheel.writestr(GUARD_PTH, Path(GUARD_PTH).read_bytes())

    def __enter__(self) -> "GuardedStrategy":
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:  # noqa: ANN002
        self.strategy.__exit__(*exc_info)


class EditableWithGuard(editable_wheel):
    """Editable installs (``pip install -e``) write only their own ``.pth``: add the guard's next to it."""

    def _select_strategy(self, name, tag, build_lib):  # noqa: ANN001, ANN202 - setuptools' signature
        return GuardedStrategy(super()._select_strategy(name, tag, build_lib))


setup(
    packages=packages,
    package_dir={namespace: folder for folder, namespace in MAPPED.items()},
    cmdclass={"build_py": BuildWithGuard, "editable_wheel": EditableWithGuard},
)
