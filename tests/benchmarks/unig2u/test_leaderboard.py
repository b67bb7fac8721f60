"""UniG2U-Bench's tables in `lmms-eval-unify leaderboard`: Table 4 with Δ against the paired base VLM
(--pairs), the G2U gains, and the pairs file."""

from __future__ import annotations

from pathlib import Path

import pytest
from leaderboard_runs import approx, read_csv, run, write_runs

from lmms_eval_unify.benchmarks.unig2u.leaderboard import DEFAULT_PAIRS, load_pairs, relabel_pairs


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """A base VLM and a unified model paired with it (Direct and GtA), on UniG2U-Bench."""
    return write_runs(tmp_path, ["unig2u"])


def test_unig2u_table4_gains_against_the_paired_base(runs, tmp_path):
    root, pairs = runs
    assert run([root, "--benchmark", "unig2u", "--pairs", pairs, "-o", tmp_path / "b", "--no-plots"]) == 0
    table4 = read_csv(tmp_path / "b" / "unig2u_table4.csv")
    assert list(table4) == ["base-vlm *", "uni-model (direct)", "uni-model (GtA)"]
    assert float(table4["base-vlm *"]["Overall"]) == 50.0 and float(table4["base-vlm *"]["Δ"]) == 0.0
    assert float(table4["uni-model (direct)"]["Δ"]) == approx(50.0)
    gta = table4["uni-model (GtA)"]  # 50 on every subtask except chartqa (100)
    assert float(gta["Chart & Table"]) == 100.0 and float(gta["Physics Reasoning"]) == 50.0
    assert float(gta["Overall"]) == approx(50 + 50 / 30)  # chartqa is 100 of the paper's 3000 samples
    assert float(gta["Δ"]) == approx(50 / 30)
    gains = read_csv(tmp_path / "b" / "unig2u_gains.csv")
    assert float(gains["uni-model: Δ_Direct (vs base-vlm)"]["Overall"]) == approx(50.0)
    delta_gta = gains["uni-model: Δ_GtA (GtA − Direct)"]
    assert float(delta_gta["Overall"]) == approx(50 / 30 - 50) and float(delta_gta["Chart & Table"]) == 0.0
    # Paired bootstrap: the base's noise is shared with the unified model's, so the Δ interval is valid.
    low, high = (float(table4["uni-model (direct)"][f"Δ {s}"]) for s in ("ci_low", "ci_high"))
    assert low <= 50.0 <= high


def test_unpaired_models_get_no_delta(runs, tmp_path):
    root, _ = runs
    empty = tmp_path / "none.yaml"
    empty.write_text("pairs: {}\n")
    assert run([root, "--benchmark", "unig2u", "--pairs", empty, "-o", tmp_path / "b", "--no-plots"]) == 0
    table4 = read_csv(tmp_path / "b" / "unig2u_table4.csv")
    assert {r["Δ"] for r in table4.values()} == {"-"}


def test_default_pairs_file_is_the_papers_table4_pairing():
    pairs = load_pairs(DEFAULT_PAIRS)
    assert len(pairs) == 21 and pairs["OmniGen2"] == "qwen2.5-vl-7b" and pairs["bagel"] == "llava-onevision"


def test_unig2u_pairs_may_name_recorded_or_shown_labels():
    shown = {"/w/OmniGen2": "OmniGen2", "qwen": "Qwen2.5-VL"}
    assert relabel_pairs({"/w/OmniGen2": "qwen", "other": "Qwen2.5-VL"}, shown) == {
        "OmniGen2": "Qwen2.5-VL", "other": "Qwen2.5-VL"
    }  # fmt: skip
