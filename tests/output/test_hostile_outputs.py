"""Every class of hostile model output through the real ``lmms-eval`` CLI: an oracle run's saved records are
tampered with, then replayed (``unify_replay``) and scored. Each tampered sample scores 0 with its recorded
reason, the untouched ones keep their scores, and the run finishes (issue 14)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env, results_of, samples_of

from lmms_eval_unify.output.record import SCHEMA
from lmms_eval_unify.puzzles.dataset import write_puzzles

TASK = "uni_mmmu_maze"
N_ITEMS = 14


def _lmms_eval(out: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    command = [str(BIN / "lmms-eval"), "--tasks", TASK, "--output_path", str(out), "--log_samples", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def _bomb(png: bytes) -> bytes:
    """``png`` whose header claims 100 000 x 100 000 pixels (valid CRC): a decompression bomb."""
    ihdr = struct.pack(">II", 100_000, 100_000) + png[24:29]
    return png[:16] + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr)) + png[33:]


def _tamper(records: dict[int, dict], outside: Path) -> dict[int, tuple[object, str]]:
    """Replace the records of docs 0..12 with one hostile output each: doc -> (new response, reason)."""

    def image_of(doc: int) -> Path:
        return Path(records[doc]["root"]) / records[doc]["images"][0]

    def with_fields(doc: int, **fields: object) -> str:
        return json.dumps({**records[doc], **fields}, ensure_ascii=False)

    head = '{"schema": "' + SCHEMA + '", '
    secret = outside / "secret.png"
    secret.write_bytes(image_of(0).read_bytes())
    image_of(3).write_bytes(_bomb(image_of(3).read_bytes()))
    image_of(4).write_bytes(image_of(4).read_bytes()[:-40])  # truncated
    flipped = bytearray(image_of(5).read_bytes())
    flipped[len(flipped) // 2] ^= 0x10
    image_of(5).write_bytes(bytes(flipped))
    image_of(6).unlink()
    os.mkfifo(image_of(6))  # a named pipe: opening it for reading blocks until a writer comes
    image_of(7).unlink()
    image_of(7).symlink_to(secret)
    return {
        0: (with_fields(0, steps=5, images="step_0.png", text=["a"]), "malformed_record"),
        1: (head + '"text": ' + "[" * 100_000 + "]" * 100_000 + "}", "malformed_record"),
        2: (head + '"protocol": "p", "timings": {"t": 1' + "0" * 5000 + "}}", "malformed_record"),
        3: (with_fields(3), "corrupt_image"),
        4: (with_fields(4), "corrupt_image"),
        5: (with_fields(5), "corrupt_image"),
        6: (with_fields(6), "corrupt_image"),
        7: (with_fields(7), "unsafe_path"),
        8: (with_fields(8, root=str(outside), images=["secret.png"]), "unsafe_path"),
        9: (json.dumps({"text": records[9]["text"], "images": [str(secret)]}), "unsafe_path"),
        10: (with_fields(10, images=["../../../../../../etc/hostname"]), "unsafe_path"),
        11: (with_fields(11, text=records[11]["text"] + " \ud800 lone surrogate"), ""),
        12: (with_fields(12, steps=[1, ["two"], {"text": 3}]), "malformed_record"),
    }


@pytest.mark.slow
def test_every_hostile_output_class_scores_zero_with_its_reason(tmp_path):
    data = tmp_path / "data"
    write_puzzles(data / "uni_mmmu", N_ITEMS, N_ITEMS, seed=2)
    env = offline_env(data)
    oracle = tmp_path / "oracle"
    done = _lmms_eval(oracle, env, "--model", "unify_oracle")
    assert done.returncode == 0, done.stderr[-3000:]
    samples_file = next(oracle.rglob(f"*_samples_{TASK}.jsonl"))
    rows = [json.loads(line) for line in samples_file.read_text().splitlines()]
    records = {row["doc_id"]: json.loads(row["filtered_resps"]) for row in rows}
    outside = tmp_path / "outside"
    outside.mkdir()
    hostile = _tamper(records, outside)
    for row in rows:
        if row["doc_id"] in hostile:
            row["filtered_resps"] = hostile[row["doc_id"]][0]
    samples_file.write_text("".join(json.dumps(row) + "\n" for row in rows))

    replayed = tmp_path / "replayed"
    results_file = next(oracle.rglob("*_results.json"))
    done = _lmms_eval(replayed, env, "--model", "unify_replay", "--model_args",
                      f"results_file={results_file}")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    scored = {s["doc_id"]: s for s in samples_of(replayed, TASK)}
    assert len(scored) == N_ITEMS
    for doc, (_, reason) in hostile.items():
        assert scored[doc]["invalid_outputs"] == reason, (doc, scored[doc]["invalid_outputs"])
        assert scored[doc]["img_sample_acc"] == (0.0 if reason else 1.0), doc
    assert scored[11]["text_sample_acc"] == scored[11]["img_sample_acc"] == 1.0  # text cleaned, still scored
    for doc in set(scored) - set(hostile):
        assert scored[doc]["img_sample_acc"] == scored[doc]["text_sample_acc"] == 1.0, doc
    results = results_of(replayed)[TASK]
    assert results["invalid_outputs,none"] == sum(1 for _, reason in hostile.values() if reason)
    assert results["img_sample_acc,none"] == pytest.approx((N_ITEMS - 12) / N_ITEMS)


API_KEY = "sk-hostile-test-4b1d-NEVER-WRITTEN"


@pytest.mark.slow
def test_bad_judge_replies_are_retried_never_cached_and_an_echoed_key_never_written(tmp_path):
    """Every judge request first gets a 500 echoing the Authorization header, then a reply whose message is
    null, then the reference verdict: the oracle still scores 100, and the key appears nowhere."""
    from collections import Counter

    from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import generate
    from lmms_eval_unify.benchmarks.uni_mmmu.reference_judge import verdict
    from lmms_eval_unify.testing.openai_server import OpenAICompatServer, Reply

    attempts: Counter[str] = Counter()

    def flaky(request) -> Reply:
        key = json.dumps(request.messages, sort_keys=True)
        attempts[key] += 1
        if attempts[key] == 1:
            return Reply(500, {"error": {"message": f"upstream failed for {request.headers['authorization']}"}})
        if attempts[key] == 2:
            return Reply(200, {"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]})
        message = {"role": "assistant", "content": verdict(request)}
        return Reply(200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

    generate(tmp_path / "data", 3, seed=4)
    with OpenAICompatServer(api_key=API_KEY, max_lifetime_s=600) as server:
        server.add_route("/v1/chat/completions", flaky)
        env = offline_env(tmp_path / "data", LMMS_EVAL_UNIFY_JUDGE_BASE_URL=server.base_url,
                          LMMS_EVAL_UNIFY_JUDGE_API_KEY=API_KEY, LMMS_EVAL_UNIFY_SKIP_PREFLIGHT="1")  # fmt: skip
        out = tmp_path / "run"
        command = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", "uni_mmmu_geometry",
                   "--output_path", str(out), "--log_samples", "--verbosity", "DEBUG"]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert attempts and set(attempts.values()) == {3}  # each reply retried twice, the bad ones not cached
    results = results_of(out)["uni_mmmu_geometry"]
    assert results["invalid_outputs,none"] == 0 and results["img_acc,none"] == results["text_acc,none"] == 1.0
    assert "[REDACTED]" in done.stdout + done.stderr  # the echoed body was logged, redacted
    written = [done.stdout, done.stderr, *(p.read_bytes().decode("utf-8", "replace") for p in out.rglob("*")
               if p.is_file())]  # fmt: skip
    assert not any(API_KEY in text for text in written)
