"""``lmms-eval-unify env create MODEL``: the environment a model's official code runs in.

A model environment is a virtualenv of the evaluator's base Python that holds the official code's pinned
libraries (``model_adapters/environments/<model>.txt``) and *sees* the evaluator's packages behind its own: a
``.pth`` file adds the evaluator's site-packages after the environment's, so torch, torchvision, numpy and Pillow
(the large, compatible part) are shared, while the pinned transformers/diffusers/huggingface-hub shadow the
evaluator's. pip resolves the pins against both (a shared package that satisfies them is not installed again;
one that does not gets its own copy in the environment, never touching the evaluator's). The adapter's worker
(:mod:`lmms_eval_unify.generation.worker`) runs there; so can the official scripts themselves
(``<env>/bin/python inference_t2i.py ...``), which is how the parity bench compares the two.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from lmms_eval_unify.generation.worker import ENVIRONMENT_MARKER, MODEL_ENVS_ENV, model_envs_root

SHARED = ("torch", "torchvision", "numpy", "pillow")
"""Evaluator packages the environment must keep sharing: pip is held to their installed versions."""
EVALUATOR_PTH = "_lmms_eval_unify_evaluator.pth"


def pins_dir() -> Path:
    """Where the adapters keep each official-code model's pins (``model_adapters/environments/``, installed under
    ``lmms_eval_unify.model_adapters``)."""
    from importlib.resources import files

    return Path(str(files("lmms_eval_unify.model_adapters") / "environments"))


def pins_file(model_id: str) -> Path:
    """The pins of ``model_id``'s official code (``model_adapters/environments/<model_id>.txt``)."""
    path = pins_dir() / f"{model_id}.txt"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in pins_dir().glob("*.txt")))
        raise SystemExit(f"no pins for {model_id!r}: the models with an environment of their own are {known}")
    return path


def shared_constraints() -> list[str]:
    """``name==version`` of each :data:`SHARED` package installed here."""
    lines = []
    for name in SHARED:
        try:
            lines.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return lines


def environment_site_packages(target: Path) -> Path:
    """The site-packages folder of the virtualenv at ``target``."""
    return Path(sysconfig.get_path("purelib", vars={"base": str(target), "platbase": str(target)}))


def create_environment(model_id: str, target: Path, pins: Path, quiet: bool = True) -> Path:
    """Create (or update) the environment at ``target`` with ``pins`` installed; its interpreter."""
    venv.EnvBuilder(with_pip=True, upgrade_deps=False).create(target)
    site_packages = environment_site_packages(target)
    evaluator = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    lines = [f"import site; site.addsitedir({path!r})" for path in evaluator]
    (site_packages / EVALUATOR_PTH).write_text("\n".join(lines) + "\n", encoding="utf-8")
    python = target / "bin" / "python"
    constraints = target / "shared-constraints.txt"
    constraints.write_text("\n".join(shared_constraints()) + "\n", encoding="utf-8")
    command = [str(python), "-m", "pip", "install", "-r", str(pins), "-c", str(constraints)]
    subprocess.run([*command, *(["-q"] if quiet else [])], check=True)
    check = "import lmms_eval_unify.generation.worker_main"
    subprocess.run([str(python), "-c", check], check=True)
    marker = {
        "model": model_id,
        "pins": str(pins.resolve()),
        "pins_sha256": hashlib.sha256(pins.read_bytes()).hexdigest(),
        "evaluator_site_packages": evaluator,
        "shared": shared_constraints(),
    }
    (target / ENVIRONMENT_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lmms-eval-unify env", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create", help="create a model's environment for its official code")
    create.add_argument("model", help="show_o2, bagel or omnigen2")
    create.add_argument("--into", help=f"the environment folder (default ${MODEL_ENVS_ENV}/<model>, now under %s)")
    create.add_argument("--pins", help="a requirements file to install instead of the model's own pins")
    create.add_argument("--verbose", action="store_true", help="show pip's output")
    args = parser.parse_args(argv)
    target = Path(args.into).expanduser() if args.into else model_envs_root() / args.model
    pins = Path(args.pins) if args.pins else pins_file(args.model)
    print(f"creating the {args.model} environment in {target} from {pins} ...", file=sys.stderr)
    python = create_environment(args.model, target.resolve(), pins, quiet=not args.verbose)
    env_arg = "" if not args.into else f" (or --model_args env={target})"
    print(
        "(pip's 'dependency conflicts' lines, if any, name evaluator packages such as datasets that the model's pins "
        "shadow there; the model environment never imports them)",
        file=sys.stderr,
    )
    print(f"{args.model}: ready; its adapter finds it{env_arg}; interpreter {python}")
    return 0
