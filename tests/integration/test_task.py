import pytest

from lmms_eval_unify.integration.task import LocalDataMissingError, local_data_files
from lmms_eval_unify.run.paths import DATA_DIR_ENV


def test_hub_dataset_when_no_local_folder(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    assert local_data_files({"benchmark": "uni_mmmu"}, "maze", "test") is None


def test_local_folder_layout_and_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(LocalDataMissingError, match="lmms-eval-unify data generate"):
        local_data_files({"benchmark": "uni_mmmu"}, "maze", "test")
    path = tmp_path / "uni_mmmu" / "maze" / "test.parquet"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    assert local_data_files({"benchmark": "uni_mmmu"}, "maze", "test") == {"test": str(path)}
