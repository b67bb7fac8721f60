import json

import pytest
from PIL import Image

from lmms_eval_unify.generation.media import MediaStore
from lmms_eval_unify.output.record import OutputFailure, UnifiedOutput, parse_output
from lmms_eval_unify.run.context import run_context
from lmms_eval_unify.scoring.task_aggregations import count_invalid, mean_supported


@pytest.fixture(autouse=True)
def _media_root_is_tmp_path(tmp_path):
    """Records in these tests point at media under ``tmp_path``: the run's trusted media root."""
    with run_context(media_base=str(tmp_path)):
        yield


def _record_with_image(tmp_path, **kwargs):
    store = MediaStore(tmp_path)
    path = store.save_image("task", 3, "image_00", Image.new("RGB", (8, 8), "red"))
    return UnifiedOutput("image_only", images=[path], root=str(store.root), **kwargs)


def test_round_trip_and_image_loading(tmp_path):
    record = _record_with_image(tmp_path, text="hi")
    parsed = parse_output(record.to_json())
    assert parsed.failure is None and parsed.text == "hi"
    images = parsed.load_images(expected=1)
    assert images[0].getpixel((0, 0)) == (255, 0, 0)


@pytest.mark.parametrize(
    "raw, reason",
    [
        ('{"schema": "lmms_eval_unify/output@1", "protocol": ', "malformed_record"),
        ("[1, 2]", "external"),
        ('{"images": "not-a-list"}', "malformed_record"),
        (None, "not_a_string"),
    ],
)
def test_malformed_outputs_never_raise(raw, reason):
    parsed = parse_output(raw)
    if reason == "external":
        assert parsed.failure is None and parsed.record.protocol == "external"
    else:
        assert parsed.failure.reason == reason


def test_plain_text_and_upstream_json_are_accepted(tmp_path):
    assert parse_output("The answer is B").text == "The answer is B"
    image = tmp_path / "a.png"
    Image.new("RGB", (4, 4)).save(image)
    parsed = parse_output(json.dumps({"text": "t", "images": [str(image)]}))
    assert len(parsed.load_images()) == 1


def test_missing_corrupt_wrong_count_and_traversal(tmp_path):
    record = _record_with_image(tmp_path)
    assert parse_output(record.to_json()).load_images(expected=2).reason == "wrong_image_count"
    (tmp_path / record.images[0]).write_bytes(b"not a png")
    assert parse_output(record.to_json()).load_images().reason == "corrupt_image"
    (tmp_path / record.images[0]).unlink()
    assert parse_output(record.to_json()).load_images().reason == "missing_image"
    record.images = ["../../etc/passwd"]
    assert parse_output(record.to_json()).load_images().reason == "unsafe_path"
    record.images = ["/etc/passwd"]
    assert parse_output(record.to_json()).load_images().reason == "unsafe_path"


def test_model_error_is_a_failure():
    assert parse_output(UnifiedOutput("direct", error="OOM").to_json()).failure == OutputFailure("model_error", "OOM")


def test_aggregations():
    assert count_invalid(["", "missing_image", "", "malformed_record"]) == 2
    assert mean_supported([1.0, 0.0, None]) == 0.5
    assert mean_supported([None, None]) == "-"
