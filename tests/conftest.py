"""Shared fixtures: a scripted adapter that exercises the protocol engine without any model."""

from __future__ import annotations

import pytest
from lmms_eval.api.instance import Instance
from PIL import Image

from lmms_eval_unify.generation.model import UNDERSTAND_AND_GENERATE, UnifiedModel
from lmms_eval_unify.integration.run_context import EXTRA_MEDIA_ROOTS_ENV


class ScriptedAdapter(UnifiedModel):
    """Answers from a script and records every primitive call (prompt, number of images, phase)."""

    model_id = "scripted"
    capabilities = UNDERSTAND_AND_GENERATE

    def __init__(self, texts, **kwargs):
        super().__init__(**kwargs)
        self.texts = list(texts)
        self.calls = []

    def understand(self, images, prompt, **decoding):
        phase = decoding.pop("phase")
        self.calls.append(("understand", prompt, len(images), phase.name, phase.step, decoding))
        return self.texts.pop(0)

    def generate_image(self, prompt, images, **decoding):
        phase = decoding.pop("phase")
        self.calls.append(("generate_image", prompt, len(images), phase.name, phase.step, decoding))
        return Image.new("RGB", (16, 16), (len(self.calls) * 10 % 255, 0, 0))


@pytest.fixture(autouse=True)
def _test_media_is_trusted(tmp_path_factory, monkeypatch):
    """Unit tests write model media anywhere under pytest's temporary folder: trust it as a media root
    (scorers refuse images outside the run's media roots). CLI runs drop this (``cli_runs.offline_env``)
    so they exercise the real trust chain; hostile-path tests use folders outside it."""
    monkeypatch.setenv(EXTRA_MEDIA_ROOTS_ENV, str(tmp_path_factory.getbasetemp()))


def make_request(
    prompt: str, gen_kwargs: dict, task: str = "toy", doc_id: int = 0, n_images: int = 1, colour: str = "blue"
) -> Instance:
    def doc_to_visual(doc):
        return [Image.new("RGB", (8, 8), colour) for _ in range(n_images)]

    return Instance(
        request_type="generate_until",
        arguments=(prompt, gen_kwargs, doc_to_visual, doc_id, task, "test"),
        idx=0,
        metadata={"task": task, "doc_id": doc_id, "repeats": 1},
    )


@pytest.fixture
def scripted(tmp_path):
    def build(texts, **kwargs):
        model = ScriptedAdapter(texts, output_dir=str(tmp_path), **kwargs)
        model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
        return model

    return build
