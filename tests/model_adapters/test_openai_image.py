"""openai_image against the project's local OpenAI-compatible server (chat + Images API, faults, retries)."""

import base64
import io
import re
from email.parser import BytesParser
from email.policy import HTTP

import pytest
from conftest import make_request
from lmms_eval_unify.model_adapters.openai_image import OpenAIImage
from PIL import Image

from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.testing import openai_server
from lmms_eval_unify.testing.openai_server import ChatRequest, Fault, OpenAICompatServer, Reply


def _png(colour) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (12, 12), colour).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


class ImagesServer(OpenAICompatServer):
    """The test server plus the Images API: JSON generations and multipart edits (parsed into ``body``)."""

    def __init__(self, policy):
        super().__init__(policy, api_key="sk-test")
        self.add_route("/v1/images/generations", lambda request: self._image("white"))
        self.add_route("/v1/images/edits", lambda request: self._image("black"))

    @staticmethod
    def _image(colour) -> Reply:
        return Reply(200, {"created": 0, "data": [{"b64_json": _png(colour)}]})

    def start(self):
        base = openai_server._handler_class(self)
        server = self

        class Handler(base):
            def do_POST(self):
                if not self.headers.get("content-type", "").startswith("multipart/form-data"):
                    return super().do_POST()
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                header = f"Content-Type: {self.headers['content-type']}\r\n\r\n".encode()
                message = BytesParser(policy=HTTP).parsebytes(header + raw)
                fields, files = {}, []
                for part in message.iter_parts():
                    name = part.get_param("name", header="content-disposition")
                    if part.get_filename():
                        files.append((name, part.get_content_type(), part.get_payload(decode=True)))
                    else:
                        fields[name] = part.get_content()
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = ChatRequest(body={"fields": fields, "files": files}, headers=headers)
                self._send(server._handle(self.path, request))

        import threading
        from http.server import ThreadingHTTPServer

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self


def _answer(request: ChatRequest) -> str:
    text = request.text
    if re.search(r"planning for step 3", text):
        return "Done."
    if "planning for step" in text:
        return "Next, move one step right."
    return '<ANSWER_JSON>["right", "right"]</ANSWER_JSON>'


@pytest.fixture
def server():
    with ImagesServer(_answer) as running:
        yield running


@pytest.fixture
def model(server, tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    adapter = OpenAIImage(
        model="gpt-image-1",
        chat_model="vlm",
        base_url=server.base_url,
        api_key_env="TEST_KEY",
        max_retries=2,
        timeout=5,
        output_dir=str(tmp_path),
    )
    adapter.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    return adapter


def test_understanding_sends_images_as_data_urls_then_the_prompt(model, server):
    assert model.understand([Image.new("RGB", (8, 8), "red")] * 2, "now planning for step 1", seed=4) == (
        "Next, move one step right."
    )
    (request,) = server.requests_to("/v1/chat/completions")
    content = request.messages[0]["content"]
    assert [part["type"] for part in content] == ["image_url", "image_url", "text"]
    assert len(request.images) == 2 and request.body["model"] == "vlm" and request.body["seed"] == 4


def test_generation_without_images_and_edits_with_one_or_several(model, server):
    assert model.generate_image("a maze", [], seed=0).getpixel((0, 0)) == (255, 255, 255)
    (generation,) = server.requests_to("/v1/images/generations")
    assert generation.body == {"model": "gpt-image-1", "prompt": "a maze", "size": "1024x1024", "n": 1}
    assert model.generate_image("move", [Image.new("RGB", (8, 8), "red")], seed=0).getpixel((0, 0)) == (
        0,
        0,
        0,
    )
    model.generate_image("move", [Image.new("RGB", (8, 8), "red")] * 3, seed=0)
    one, several = server.requests_to("/v1/images/edits")
    assert [name for name, _, _ in one.body["files"]] == ["image"]
    assert [name for name, _, _ in several.body["files"]] == ["image[]"] * 3
    assert one.body["fields"]["prompt"] == "move" and one.body["fields"]["model"] == "gpt-image-1"
    assert Image.open(io.BytesIO(one.body["files"][0][2])).getpixel((0, 0)) == (255, 0, 0)


def test_transient_errors_are_retried_and_persistent_ones_recorded(model, server):
    server.inject([Fault.http(429, retry_after="0"), Fault.http(503, retry_after="0")])
    assert model.generate_image("a maze", [], seed=0).size == (12, 12)
    assert len(server.requests_to("/v1/images/generations")) == 3
    server.inject([Fault.http(500, retry_after="0")] * 3)
    out = parse_output(model.generate_until([make_request("draw", {"protocol": "image_only"}, doc_id=1)])[0])
    assert out.failure.reason == "model_error" and "500" in out.record.error


def test_missing_key_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(RuntimeError, match=r"\$NO_SUCH_KEY"):
        OpenAIImage(api_key_env="NO_SUCH_KEY", output_dir=str(tmp_path))


@pytest.mark.heavy  # the lmms-eval evaluator in process
def test_maze_through_the_real_evaluator(model, server, puzzle_data, monkeypatch):
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    from lmms_eval_unify.integration.plugin import install_task_index

    monkeypatch.setenv("LMMS_EVAL_UNIFY_DATA_DIR", str(puzzle_data))
    install_task_index()
    out = simple_evaluate(
        model=model, tasks=["uni_mmmu_maze"], task_manager=TaskManager("WARNING"), log_samples=True, limit=2
    )
    samples = out["samples"]["uni_mmmu_maze"]
    assert len(samples) == 2 and out["results"]["uni_mmmu_maze"]["invalid_outputs,none"] == 0
    for sample in samples:
        record = parse_output(sample["filtered_resps"][0]).record
        assert record.text == '<ANSWER_JSON>["right", "right"]</ANSWER_JSON>' and len(record.images) == 2
    edits = server.requests_to("/v1/images/edits")
    assert len(edits) == 4 and all(len(e.body["files"]) >= 1 for e in edits)
