"""Package layout: the repository keeps top-level ``tasks/`` and ``model_adapters/`` folders, installed
under the ``lmms_eval_unify`` namespace so no generic top-level import names are created."""

from setuptools import find_namespace_packages, setup

MAPPED = {"tasks": "lmms_eval_unify.tasks", "model_adapters": "lmms_eval_unify.model_adapters"}

EXCLUDE = ["*__pycache__*", "*.egg-info*"]

packages = find_namespace_packages(include=["lmms_eval_unify", "lmms_eval_unify.*"], exclude=EXCLUDE)
for folder, namespace in MAPPED.items():
    found = find_namespace_packages(include=[folder, f"{folder}.*"], exclude=EXCLUDE)
    packages += [namespace + name[len(folder) :] for name in found]

setup(
    packages=packages,
    package_dir={namespace: folder for folder, namespace in MAPPED.items()},
)
