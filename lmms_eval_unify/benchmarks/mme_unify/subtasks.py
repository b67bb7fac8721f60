"""The 15 MME-Unify subtasks: lmms-eval dataset names, domains and the released sizes (spec §1.1)."""

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
UNDERSTANDING = ("SIPU", "MITIU", "VPU")
UNIFY_QA = ("IEE", "CSQ", "AL", "SD")
SCORING_VARIANTS = ("corrected", "official")
