"""Each adapter against its model's own inference code: same tiny random weights, prompt, image and seed.

Usage: ``python bench/adapter_parity.py --model NAME [--official DIR] [--env ENV] [--work DIR]`` where NAME is one of
the models below, DIR a checkout of the model's official code (not needed for qwen_image_edit, whose reference is
the model card's call of the installed diffusers pipeline) and ENV the model's environment where its official code
needs one (``lmms-eval-unify env create NAME``). Each model's bench is ``bench/parity/<NAME>.py`` (it runs alone
too); the last line printed is ``NAME: k/n identical``. Results, causes of every difference and the commits
checked: docs/fidelity/adapters.md. BAGEL has no entry: its official code cannot run on a CPU
(docs/models/bagel.md names the lines and gives the GPU command).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

PARITY = Path(__file__).resolve().parent / "parity"
CHECKOUTS = {
    "show_o2": ("showlab/Show-o", ("show-o2/models/__init__.py", "models/__init__.py")),
    "omnigen2": ("VectorSpaceLab/OmniGen2", ("omnigen2/pipelines/omnigen2/pipeline_omnigen2.py",)),
    "janus_pro": ("deepseek-ai/Janus", ("janus/models/__init__.py",)),
    "emu3": ("baaivision/Emu3", ("emu3/mllm/processing_emu3.py",)),
    "qwen_image_edit": None,
}
"""Each model's official repository and a file that marks a checkout of it (``None``: no checkout needed)."""
MODELS = tuple(CHECKOUTS)


def checkout_problem(model: str, official: str | None) -> str | None:
    """Why ``official`` is not a checkout the model's bench can use (``None`` when it is, or none is needed)."""
    needed = CHECKOUTS[model]
    if needed is None:
        return None
    repository, probes = needed
    if official is None:
        return f"{model}: pass --official DIR, a checkout of https://github.com/{repository}"
    if not any((Path(official) / probe).is_file() for probe in probes):
        return f"{model}: {official} is not a checkout of https://github.com/{repository} (no {' or '.join(probes)})"
    return None


def main(argv: list[str] | None = None) -> int:
    # random weights decode to any characters: print them escaped where the locale cannot encode them
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    os.environ["PYTHONIOENCODING"] = "utf-8:backslashreplace"  # the official scripts' output goes to log files
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], add_help=False)
    parser.add_argument("--model", required=True, choices=MODELS)
    parser.add_argument("--official")
    known, rest = parser.parse_known_args(argv)
    if "-h" not in rest and "--help" not in rest:
        problem = checkout_problem(known.model, known.official)
        if problem:
            raise SystemExit(problem)
    rest = [*rest, *(["--official", known.official] if known.official else [])]
    spec = importlib.util.spec_from_file_location(f"parity_{known.model}", PARITY / f"{known.model}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses of the module look themselves up there
    spec.loader.exec_module(module)
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
