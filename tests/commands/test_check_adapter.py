"""``lmms-eval-unify check-adapter``: every claimed protocol on one sample, failures named, exit status."""

import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from lmms_eval_unify.adapter import UNDERSTAND_AND_GENERATE, UnifiedModel
from lmms_eval_unify.cli import main
from lmms_eval_unify.commands import check_adapter
from lmms_eval_unify.generation.protocols import PROTOCOLS


class BrokenPainter(UnifiedModel):
    """Claims image generation but cannot draw; answers in text."""

    model_id = "broken_painter"
    capabilities = UNDERSTAND_AND_GENERATE

    def understand(self, images, prompt, **decoding):
        return f"{len(images)} image(s) seen"

    def generate_image(self, prompt, images, **decoding):
        raise RuntimeError("no canvas")


class FourPixelPainter(BrokenPainter):
    model_id = "four_pixel_painter"

    def generate_image(self, prompt, images, **decoding):
        return Image.new("RGB", (2, 2), "blue")


def test_every_protocol_has_a_sample_prompt():
    assert set(check_adapter.PROMPTS) == set(PROTOCOLS)


def test_the_oracle_passes_every_protocol_through_the_cli(tmp_path, capsys):
    assert main(["check-adapter", "unify_oracle", "--output_dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split()[0]: line.split()[1] for line in out.splitlines() if line.split()[:1] in [[p] for p in PROTOCOLS]
    }
    assert rows == {protocol: "ok" for protocol in PROTOCOLS}
    assert "1 image(s) 64x64" in out and "3 video frame(s)" in out and "all 7 claimed protocols work" in out
    assert list(tmp_path.glob("unify_oracle-*/check_adapter/*/record.json"))


def test_a_failing_primitive_fails_exactly_the_protocols_that_use_it(tmp_path):
    model = BrokenPainter(output_dir=str(tmp_path), resume=False)
    checks = {c.protocol: c for c in check_adapter.run_checks(model, max_new_tokens=8)}
    assert set(checks) == set(PROTOCOLS) - {"video"}  # only what the capabilities claim
    assert checks["direct"].ok and checks["direct"].summary == "text 15 chars"
    for protocol in set(PROTOCOLS) - {"direct", "video"}:
        assert not checks[protocol].ok
        assert checks[protocol].summary == "model_error: RuntimeError: no canvas", protocol
    table = check_adapter.format_table(list(checks.values()))
    assert "FAILED" in table and "no canvas" in table


def test_main_exits_1_when_a_claimed_protocol_fails_and_0_when_all_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(check_adapter, "build_model", lambda name, args, out: BrokenPainter(output_dir=out))
    assert check_adapter.main(["broken_painter", "--output_dir", str(tmp_path)]) == 1
    assert "5 of 6 claimed protocols failed" in capsys.readouterr().out
    monkeypatch.setattr(
        check_adapter, "build_model", lambda name, args, out: FourPixelPainter(output_dir=out, resume=False)
    )
    assert check_adapter.main(["four_pixel_painter", "--output_dir", str(tmp_path)]) == 0
    assert "1 image(s) 2x2" in capsys.readouterr().out


def test_a_model_that_cannot_be_built_exits_2_with_the_reason(tmp_path, capsys):
    assert main(["check-adapter", "unify_random", "--model_args", "seed=abc", "--output_dir", str(tmp_path)]) == 2
    assert "model argument seed='abc': expected int" in capsys.readouterr().out
    assert main(["check-adapter", "no_such_model", "--output_dir", str(tmp_path)]) == 2
    assert "no_such_model: cannot build the model" in capsys.readouterr().out


@pytest.mark.subprocess
def test_the_installed_command_runs_it(tmp_path):
    command = Path(sys.executable).parent / "lmms-eval-unify"
    done = subprocess.run(
        [str(command), "check-adapter", "unify_random", "--output_dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all 7 claimed protocols work" in done.stdout
