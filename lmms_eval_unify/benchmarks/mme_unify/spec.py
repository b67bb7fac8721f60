"""MME-Unify at a glance (torch-free): the 14 subtasks (lmms-eval dataset names, domains, released sizes;
benchmark_facts §1.1), their per-sample metrics and metric backbones, scoring variants, task names, groups
and the paper's roll-up. The scorers and the roll-ups in ``lmms_eval_unify.benchmarks.mme_unify.paper`` read
these names from here; ``tests/benchmarks/test_generated_yamls.py`` and ``tests/scoring/test_scorer.py`` check
the task and group YAMLs against them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Subtask:
    """One subtask: the paper's abbreviation, its domain and the number of items in the official release."""

    name: str
    domain: str
    n_release: int

    @property
    def dataset_name(self) -> str:
        """Folder of the local-data layout and the suffix of the task name (``mme_unify_<dataset_name>``)."""
        return self.name.lower()


SUBTASKS = {
    s.name: s
    for s in (
        Subtask("SIPU", "understanding", 1200),
        Subtask("MITIU", "understanding", 400),
        Subtask("VPU", "understanding", 364),
        Subtask("FIR", "generation", 200),
        Subtask("TIE", "generation", 600),
        Subtask("TIG", "generation", 200),
        Subtask("CIVG", "generation", 200),
        Subtask("TVG", "generation", 200),
        Subtask("VP", "generation", 194),
        Subtask("IEE", "unify", 200),
        Subtask("CSQ", "unify", 101),
        Subtask("AL", "unify", 52),
        Subtask("SD", "unify", 100),
        Subtask("VCoT", "unify", 90),
    )
}
BENCHMARK = "mme_unify"
TASK_PREFIX = f"{BENCHMARK}_"
"""Prefix of every task name of the benchmark (the leaderboard reads the tasks that start with it)."""
UNDERSTANDING = ("SIPU", "MITIU", "VPU")
GENERATION = ("CIVG", "FIR", "TIE", "TIG", "TVG", "VP")
UNIFY = ("IEE", "CSQ", "AL", "SD", "VCoT")
DOMAINS = {"understanding": UNDERSTANDING, "generation": GENERATION, "unify": UNIFY}
UNIFY_QA = ("IEE", "CSQ", "AL", "SD")
VIDEO = ("CIVG", "TVG", "VP")
IMAGE_GENERATION = tuple(s for s in GENERATION if s not in VIDEO)
VIDEO_UNDERSTANDING = ("VPU",)
"""Understanding subtasks whose input is a video."""
CLIP_SCORED = ("TIE", "TIG")
SCORING_VARIANTS = ("corrected", "official")
"""``corrected`` (ours) or ``official`` (the released scripts, bugs included; docs/fidelity/mme_unify.md)."""
HAS_OFFICIAL = (*GENERATION, *UNIFY)
"""Subtasks with an ``_official`` task; understanding has no released-script variant."""

VCOT_METRICS = (
    "n_steps",
    "image_steps",
    "action_steps_correct",
    "coordinate_steps_correct",
    "image_steps_correct",
)
METRICS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(UNDERSTANDING, ("acc",)),
    **dict.fromkeys(UNIFY_QA, ("text_correct", "image_correct")),
    "VCoT": VCOT_METRICS,
    "FIR": ("lpips",),
    "TIE": ("clip_i", "clip_t"),
    "TIG": ("clip_i", "clip_t"),
    "CIVG": ("fvd", "fid", "clipsim"),
    "TVG": ("fvd", "fid", "clipsim"),
    "VP": ("fvd", "fid"),
}
"""Per-sample metric keys of each subtask's scorer (besides ``invalid_outputs``)."""
LOWER_IS_BETTER = frozenset({"lpips", "fvd", "fid"})
METRIC_FAMILIES: dict[str, tuple[str, ...]] = {
    "FIR": ("lpips",),
    "TIE": ("clip_score",),
    "TIG": ("clip_score",),
    "CIVG": ("fvd", "fid", "clip_score"),
    "TVG": ("fvd", "fid", "clip_score"),
    "VP": ("fvd", "fid"),
    **dict.fromkeys(UNIFY, ("clip_choice",)),
}
"""Metric backbones each subtask's scorer loads (checked by the run preflight before generation)."""

JUDGE_MODEL = None
"""MME-Unify is scored without a model-as-judge."""
GROUP = BENCHMARK


def task_name(subtask: str, variant: str = "corrected") -> str:
    """lmms-eval task name of a subtask in a scoring variant, e.g. ``mme_unify_vcot``, ``mme_unify_vcot_official``."""
    suffix = "_official" if variant == "official" and subtask in HAS_OFFICIAL else ""
    return f"{BENCHMARK}_{subtask.lower()}{suffix}"


def metric_families(task: str) -> tuple[str, ...]:
    """The metric backbones the scorer of `task` (either variant) loads: :data:`METRIC_FAMILIES` of its subtask."""
    name = task.removeprefix(TASK_PREFIX).removesuffix("_official")
    return next((METRIC_FAMILIES.get(s, ()) for s in SUBTASKS if s.lower() == name), ())
