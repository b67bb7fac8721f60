import sys

from PIL import Image

from lmms_eval_unify.generation.media import MediaStore, configuration_folder, resolve_output_root
from lmms_eval_unify.output.record import OUTPUT_DIR_ENV, UnifiedOutput
from lmms_eval_unify.run.context import run_context


def test_output_root_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv(OUTPUT_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["lmms-eval", "--output_path", str(tmp_path / "argv_is_not_read")])
    assert resolve_output_root(None) == (tmp_path / "lmms_eval_unify_outputs").resolve()
    with run_context(output_path=str(tmp_path / "run")):
        assert resolve_output_root(None) == (tmp_path / "run" / "unify_media").resolve()
        monkeypatch.setenv(OUTPUT_DIR_ENV, str(tmp_path / "env"))
        assert resolve_output_root(None) == (tmp_path / "env").resolve()
        assert resolve_output_root(str(tmp_path / "explicit")) == (tmp_path / "explicit").resolve()


def test_configuration_folder_differs_with_any_describe_field():
    base = {"model": "m", "seed": 0, "vae_path": "a"}
    assert configuration_folder("m", base) == configuration_folder("m", dict(reversed(base.items())))
    assert configuration_folder("m", base) != configuration_folder("m", {**base, "vae_path": "b"})
    assert configuration_folder("m", base).startswith("m-")


def test_hostile_task_and_doc_names_stay_inside_root(tmp_path):
    store = MediaStore(tmp_path)
    relative = store.save_image("../../evil", "../x", "../../name", Image.new("RGB", (2, 2)))
    assert (tmp_path / relative).resolve().is_relative_to(tmp_path.resolve())


def test_resume_needs_same_signature_and_all_images(tmp_path):
    store = MediaStore(tmp_path)
    path = store.save_image("t", 1, "image_00", Image.new("RGB", (2, 2)))
    store.save_record("t", 1, UnifiedOutput("image_only", images=[path], signature="abc"))
    assert store.load_record("t", 1, "abc").images == [path]
    assert store.load_record("t", 1, "other") is None
    (tmp_path / path).unlink()
    assert store.load_record("t", 1, "abc") is None


def test_a_corrupt_or_deeply_nested_saved_record_is_run_again(tmp_path):
    store = MediaStore(tmp_path)
    store.save_record("t", 1, UnifiedOutput("direct", text="x", signature="abc"))
    record = tmp_path / "t" / "1" / "record.json"
    for text in ("[" * 100_000 + "]" * 100_000, '{"schema": 1', '{"protocol": [1, 2]}'):
        record.write_text(text)
        assert store.load_record("t", 1, "abc") is None


def test_merged_provenance_appends_new_facts_replaces_this_processes_own_and_keeps_the_newest():
    from lmms_eval_unify.generation.media import MAX_PROVENANCE_ENTRIES, merged_provenance

    a, b, c = {"v": 1}, {"v": 2}, {"v": 3}
    assert merged_provenance(None, a, None) == [a]
    assert merged_provenance([a], a, None) == [a]  # a resumed run against the same server adds nothing
    assert merged_provenance([a], b, None) == [a, b]
    assert merged_provenance([a, b], c, b) == [a, c]  # what this process learnt since it wrote b
    assert merged_provenance([a, b], a, b) == [a]
    assert merged_provenance([a, b], c, a) == [a, b, c]  # another run wrote since: never drop its entry
    assert merged_provenance("garbage", {}, None) == []
    many = [{"v": i} for i in range(MAX_PROVENANCE_ENTRIES)]
    assert merged_provenance(many, c, None) == [*many[1:], c]
