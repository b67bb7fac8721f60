"""openai_image against the project's local OpenAI-compatible server: chat, the Images API (generations, edits
with one or several input images, the seed, ``n``, ``size``, ``b64_json`` and ``url`` replies) and the judge
client's request rules (deadlines, redirects, retries, limits, the API key redacted)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import threading
from collections import Counter

import pytest
from cli_runs import BIN, offline_env, results_of, samples_of
from conftest import make_request
from lmms_eval.utils import simple_parse_args_string
from lmms_eval_unify.model_adapters.openai_image import OpenAIImage
from PIL import Image

from lmms_eval_unify.gate import Refused
from lmms_eval_unify.generation.settings import ModelArgumentError
from lmms_eval_unify.judges.client import ChatClient, JudgeRequestError, RetryPolicy
from lmms_eval_unify.judges.http import EndpointError
from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.testing.openai_server import (
    ChatRequest,
    Fault,
    OpenAICompatServer,
    Reply,
    drawn_image,
    fixed_reply,
)

API_KEY = "sk-test-4b1d"
RED = Image.new("RGB", (8, 6), "red")


def _answer(request: ChatRequest) -> str:
    text = request.text
    if re.search(r"planning for step 3", text):
        return "Done."
    if "planning for step" in text:
        return "Next, move one step right."
    return '<ANSWER_JSON>["right", "right"]</ANSWER_JSON>'


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def drawn(prompt: str, seed: int, inputs: list[Image.Image], size: tuple[int, int], index: int = 0) -> Image.Image:
    """The image the server draws for these inputs (what the adapter must return, pixel for pixel)."""
    return Image.open(io.BytesIO(drawn_image(prompt, seed, [_png(im) for im in inputs], index, size))).convert("RGB")


def same(a: Image.Image, b: Image.Image) -> bool:
    return a.size == b.size and a.tobytes() == b.tobytes()


@pytest.fixture
def server():
    with OpenAICompatServer(_answer, api_key=API_KEY).serve_images() as running:
        yield running


@pytest.fixture
def waits() -> list[float]:
    """The waits between attempts (recorded instead of slept)."""
    return []


@pytest.fixture
def make(server, waits, tmp_path, monkeypatch):
    """An adapter on ``server`` (the served model's name, the seed sent, 32x24 images), with extra arguments."""
    monkeypatch.setenv("TEST_KEY", API_KEY)

    def build(**args) -> OpenAIImage:
        defaults = {"model": "served/model", "chat_model": "vlm", "base_url": server.base_url, "send_seed": True,
                    "api_key_env": "TEST_KEY", "size": "32x24", "max_retries": 2, "timeout": 5}  # fmt: skip
        adapter = OpenAIImage(**{**defaults, **args}, output_dir=str(tmp_path))
        adapter.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
        for endpoint in {*adapter.endpoints, adapter.chat_endpoint}:
            endpoint.sleep = waits.append
        return adapter

    return build


@pytest.fixture
def model(make) -> OpenAIImage:
    return make()


def test_understanding_sends_images_as_data_urls_then_the_prompt(model, server):
    assert model.understand([RED] * 2, "now planning for step 1", seed=4) == "Next, move one step right."
    (request,) = server.requests_to("/v1/chat/completions")
    content = request.messages[0]["content"]
    assert [part["type"] for part in content] == ["image_url", "image_url", "text"]
    assert len(request.images) == 2 and request.body["model"] == "vlm" and request.body["seed"] == 4


def test_generation_without_images_and_edits_with_one_or_several(model, server):
    assert same(model.generate_image("a maze", [], seed=7), drawn("a maze", 7, [], (32, 24)))
    (generation,) = server.requests_to("/v1/images/generations")
    assert generation.body == {"model": "served/model", "prompt": "a maze", "n": 1, "size": "32x24", "seed": 7}
    assert same(model.generate_image("move", [RED], seed=7), drawn("move", 7, [RED], (32, 24)))
    blue = Image.new("RGB", (8, 6), "blue")
    assert same(model.generate_image("move", [RED, blue, RED], seed=7), drawn("move", 7, [RED, blue, RED], (32, 24)))
    one, several = server.requests_to("/v1/images/edits")
    assert [name for name, _, _ in one.body["files"]] == ["image"]
    assert [name for name, _, _ in several.body["files"]] == ["image[]"] * 3
    assert one.body["fields"] == {"model": "served/model", "prompt": "move", "n": "1", "size": "32x24", "seed": "7"}
    assert [Image.open(io.BytesIO(data)).getpixel((0, 0)) for _, _, data in several.body["files"]] == [
        (255, 0, 0),
        (0, 0, 255),
        (255, 0, 0),
    ]


def test_sampler_settings_and_extra_body_reach_both_image_routes_and_name_the_configuration(make, server):
    """A served diffusion model's recipe is pinned from --model_args: the sampler settings go in the request when
    set, ``extra_body`` is merged last and verbatim (JSON body; JSON-encoded form fields for edits), and all of
    them are part of describe(), so configurations that differ in them never share a media folder."""
    args = (
        "num_inference_steps=28,guidance_scale=4.5,negative_prompt=blurry,"
        'extra_body={"true_cfg_scale":4.0,"seed":99,"lora":{"scale":0.5}}'
    )
    model = make(**simple_parse_args_string(args))
    model.generate_image("a maze", [], seed=7)
    model.generate_image("move", [RED], seed=7)
    (generation,) = server.requests_to("/v1/images/generations")
    (edit,) = server.requests_to("/v1/images/edits")
    expected = {"num_inference_steps": 28, "guidance_scale": 4.5, "negative_prompt": "blurry", "true_cfg_scale": 4.0}
    assert generation.body == {
        "model": "served/model", "prompt": "a maze", "n": 1, "size": "32x24", **expected, "seed": 99,
        "lora": {"scale": 0.5},
    }  # fmt: skip
    assert edit.body["fields"] == {
        "model": "served/model", "prompt": "move", "n": "1", "size": "32x24", "num_inference_steps": "28",
        "guidance_scale": "4.5", "negative_prompt": "blurry", "true_cfg_scale": "4.0", "seed": "99",
        "lora": '{"scale": 0.5}',
    }  # fmt: skip
    described = model.describe()
    assert described["extra_body"] == {"true_cfg_scale": 4.0, "seed": 99, "lora": {"scale": 0.5}}
    assert (described["num_inference_steps"], described["guidance_scale"], described["negative_prompt"]) == (
        28,
        4.5,
        "blurry",
    )
    assert make().describe() != described
    with pytest.raises(ModelArgumentError, match="extra_body"):
        make(extra_body="[1, 2]")
    with pytest.raises(ModelArgumentError, match="extra_body"):
        make(extra_body="{not json")


@pytest.mark.parametrize(
    ("shape", "url"), [("images", "data"), ("content", "data"), ("images", "file"), ("content", "file")]
)
def test_images_from_chat_completions_in_both_reply_shapes(make, server, shape, url):
    """endpoint=chat asks chat completions for the image modality (OpenRouter's Nano Banana, vLLM-Omni's chat
    route) and reads OpenRouter's ``message.images`` or image parts of ``message.content``, as data URLs or URLs."""
    server.serve_chat_images(shape, url)
    model = make(endpoint="chat", extra_body='{"top_k":1}', num_inference_steps=9, guidance_scale=2.5)
    assert same(model.generate_image("a maze", [], seed=7), drawn("a maze", 7, [], (32, 24)))
    assert same(model.generate_image("move", [RED], seed=7), drawn("move", 7, [RED], (32, 24)))
    assert same(model.generate_image("move", [RED], seed=8), drawn("move", 8, [RED], (32, 24)))
    first, edit, _ = server.requests_to("/v1/chat/completions")
    assert first.body["modalities"] == ["image", "text"] and first.body["model"] == "served/model"
    assert (first.body["n"], first.body["size"], first.body["seed"], first.body["top_k"]) == (1, "32x24", 7, 1)
    assert (first.body["num_inference_steps"], first.body["guidance_scale"]) == (9, 2.5)
    assert "prompt" not in first.body and first.text == "a maze" and first.images == []
    assert edit.images == [_png(RED)] and edit.text == "move"
    assert server.requests_to("/v1/images/generations") == [] == server.requests_to("/v1/images/edits")


def test_a_chat_reply_without_the_asked_images_is_refused(make, server, waits):
    model = make(endpoint="chat", max_retries=1)
    out = parse_output(model.generate_until([make_request("draw", {"protocol": "image_only"})])[0])
    assert out.failure is not None and "0 images in the chat reply for n=1" in out.record.error
    with pytest.raises(ModelArgumentError, match="endpoint"):
        make(endpoint="completions")


def test_max_concurrency_keeps_that_many_requests_in_flight_and_equals_serial(make, server):
    """Eight images with ``max_concurrency=4``: the server holds each request until four are in flight (a barrier,
    so the test needs no timing), never sees more than four, and the images equal serial ones, in order."""
    barrier = threading.Barrier(4, timeout=60)

    def held(request):
        barrier.wait()
        return server._images(request)

    server.add_route("/v1/images/generations", held)
    batch = [(f"picture {i}", [], {"seed": 100 + i}) for i in range(8)]
    images = make(max_concurrency=4).generate_image_batch(batch)
    assert 1 < server.max_in_flight <= 4 and not barrier.broken
    assert [im.tobytes() for im in images] == [drawn(p, d["seed"], [], (32, 24)).tobytes() for p, _, d in batch]
    with pytest.raises(ValueError, match="max_concurrency must be at least 1"):
        make(max_concurrency=0)


def test_requests_are_spread_over_several_servers_and_understanding_can_be_another(make, server):
    with (
        OpenAICompatServer(_answer, api_key=API_KEY).serve_images() as second,
        OpenAICompatServer(fixed_reply("from the chat server"), api_key=API_KEY) as chat,
    ):
        model = make(base_url=f"{server.base_url}|{second.base_url}", chat_base_url=chat.base_url, max_concurrency=2)
        batch = [(f"picture {i}", [], {"seed": i}) for i in range(5)]
        images = model.generate_image_batch(batch)
        assert [len(s.requests_to("/v1/images/generations")) for s in (server, second)] == [3, 2]
        assert [r.body["prompt"] for r in second.requests_to("/v1/images/generations")] == ["picture 1", "picture 3"]
        assert [im.tobytes() for im in images] == [drawn(p, d["seed"], [], (32, 24)).tobytes() for p, _, d in batch]
        assert model.understand([RED], "what?") == "from the chat server"
        assert server.requests_to() == [] and len(chat.requests_to()) == 1


def test_the_sample_seed_reaches_the_server_and_equal_seeds_give_equal_images(make, server):
    model = make(resume=False)  # doc 1 asked twice reaches the server twice
    requests = [make_request("draw", {"protocol": "image_only"}, doc_id=d) for d in (1, 2, 1)]
    outputs = [parse_output(out) for out in model.generate_until(requests)]
    images = [out.load_images()[0] for out in outputs]
    seeds = [int(request.body["fields"]["seed"]) for request in server.requests_to("/v1/images/edits")]
    assert seeds == [model.sample_seed("toy", d) for d in (1, 2, 1)] and seeds[0] != seeds[1]
    assert same(images[0], images[2]) and not same(images[0], images[1])
    assert same(model.draw("a cat", [], n=1, seed=11)[0], model.draw("a cat", [], n=1, seed=11)[0])
    assert not same(model.draw("a cat", [], n=1, seed=11)[0], model.draw("a cat", [], n=1, seed=12)[0])
    unseeded = make(send_seed=False)
    first, second = (unseeded.draw("a cat", [RED], n=1, seed=11)[0] for _ in range(2))
    assert all("seed" not in request.body["fields"] for request in server.requests_to("/v1/images/edits")[-2:])
    assert not same(first, second)  # the server drew each with a random seed of its own


def test_several_images_in_one_reply_and_a_reply_with_another_count_is_retried_then_refused(model, server, waits):
    images = model.draw("a cat", [], n=3, seed=5)
    assert [same(im, drawn("a cat", 5, [], (32, 24), index=i)) for i, im in enumerate(images)] == [True] * 3
    assert len({im.tobytes() for im in images}) == 3 and server.requests_to("/v1/images/generations")[0].body["n"] == 3
    edits = model.draw("move", [RED, RED], n=2, seed=5)
    assert len(edits) == 2 and server.requests_to("/v1/images/edits")[0].body["fields"]["n"] == "2"
    server.add_route("/v1/images/generations", lambda request: Reply(200, {"data": [{"b64_json": ""}]}))
    with pytest.raises(EndpointError, match=r"giving up after 3 attempts: malformed response body \(1 images for n=3"):
        model.draw("a cat", [], n=3, seed=5)
    assert len(waits) == 2


@pytest.mark.parametrize(("size", "expected"), [("40x30", (40, 30)), ("none", (64, 64))])
def test_size_is_sent_and_honoured_or_left_to_the_server(make, server, size, expected):
    model = make(size=size)
    assert model.generate_image("a cat", [], seed=1).size == expected
    assert ("size" in server.requests_to("/v1/images/generations")[0].body) == (size != "none")
    # without a size the server's edit keeps its first input's size
    assert model.generate_image("move", [RED], seed=1).size == (expected if size != "none" else RED.size)


def test_url_replies_are_downloaded_without_the_key_and_equal_the_b64_ones(make, server):
    inline = make().generate_image("a cat", [RED], seed=3)
    server.image_reply = "url"
    served = make().generate_image("a cat", [RED], seed=3)
    assert same(inline, served) and same(served, drawn("a cat", 3, [RED], (32, 24)))
    (download,) = server.requests_to("/v1/images/files")
    assert "authorization" not in download.headers
    server.image_reply = "b64_json"
    asked = make(response_format="url")
    assert same(asked.generate_image("a cat", [], seed=3), drawn("a cat", 3, [], (32, 24)))
    assert server.requests_to("/v1/images/generations")[-1].body["response_format"] == "url"
    assert len(server.requests_to("/v1/images/files")) == 2


CHAT = [{"role": "user", "content": [{"type": "text", "text": "now planning for step 1"}]}]


@pytest.mark.parametrize(
    "fault",
    [
        Fault.drip(0.05),
        Fault.drip(0.05, body_only=True),
        Fault.redirect("http://elsewhere.example/v1/chat/completions"),
        Fault.http(500),
        Fault.http(400),
        Fault.garbage_body(),
    ],
    ids=["drip", "drip-body", "redirect", "500", "400", "garbage"],
)
def test_a_failing_request_fails_with_the_judge_clients_reason(make, server, fault):
    """The judge's client and the adapter, on the same server and fault, without retries: the same error text."""
    judge = ChatClient(server.base_url, API_KEY, deadline_s=0.5, max_concurrency=1, retry=RetryPolicy(max_retries=0))
    server.inject([fault])
    with pytest.raises(JudgeRequestError) as judged:
        judge.complete("vlm", CHAT, {"max_tokens": 8})
    model = make(max_retries=0, timeout=0.5)
    server.inject([fault])
    with pytest.raises(EndpointError) as failed:
        model.understand([], "now planning for step 1", max_new_tokens=8)
    assert str(failed.value) == str(judged.value)


@pytest.mark.parametrize("image_reply", ["b64_json", "url"])
def test_image_requests_and_downloads_fail_with_the_same_reasons(make, server, image_reply):
    server.image_reply = image_reply
    model = make(max_retries=0, timeout=0.5)
    server.inject([Fault.drip(0.05)])
    with pytest.raises(EndpointError, match=r"giving up after 1 attempts: no complete reply within the 0.5 s deadline"):
        model.generate_image("a cat", [RED], seed=1)
    assert server.closed_mid_drip.wait(10)
    server.inject([Fault.redirect("http://elsewhere.example/x.png", status=302)])
    with pytest.raises(EndpointError, match=r"^HTTP 302 redirect to 'http://elsewhere.example/x.png' refused"):
        model.generate_image("a cat", [], seed=1)
    if image_reply == "url":  # the second request of a call (the download) gets the fault
        server.inject([Fault(), Fault.drip(0.05, body_only=True)])
        with pytest.raises(EndpointError, match=r"no complete reply within the 0.5 s deadline"):
            model.generate_image("a cat", [], seed=1)
        server.inject([Fault(), Fault.redirect("http://elsewhere.example/x.png")])
        with pytest.raises(EndpointError, match=r"^HTTP 307 redirect to 'http://elsewhere.example/x.png' refused"):
            model.generate_image("a cat", [], seed=1)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/images/generations", "/v1/images/files"])
@pytest.mark.parametrize(("retry_after", "wait"), [("7", 7.0), ("1000", 300.0)])
def test_a_429_is_retried_after_the_wait_its_retry_after_names(make, server, waits, path, retry_after, wait):
    """Retry-After sets the least wait (capped as the judge client caps it); every kind of request is retried."""
    server.image_reply = "url"
    model = make()
    ahead = [Fault()] if path == "/v1/images/files" else []  # the download is the call's second request
    server.inject([*ahead, Fault.http(429, retry_after=retry_after)])
    if path == "/v1/chat/completions":
        assert model.understand([], "now planning for step 1") == "Next, move one step right."
    else:
        assert same(model.generate_image("a cat", [], seed=2), drawn("a cat", 2, [], (32, 24)))
    assert waits == [wait] and len(server.requests_to(path)) == 2
    judged: list[float] = []
    judge = ChatClient(
        server.base_url, API_KEY, deadline_s=5, max_concurrency=1, retry=RetryPolicy(), sleep=judged.append
    )
    server.inject([Fault.http(429, retry_after=retry_after)])
    if float(retry_after) < 2 * 5:  # within the judgement's budget (twice its deadline): waited as the model waits
        judge.complete("vlm", CHAT, {})
        assert judged == waits
    else:  # past it: the judgement fails at once, where the model (no budget) waits the capped time
        with pytest.raises(JudgeRequestError, match="would pass the 10 s budget"):
            judge.complete("vlm", CHAT, {})
        assert judged == []


def test_persistent_errors_are_recorded_for_the_sample(model, server, waits):
    server.inject([Fault.http(503, retry_after="0"), Fault.http(500)])
    assert model.generate_image("a maze", [], seed=0).size == (32, 24)
    assert len(server.requests_to("/v1/images/generations")) == 3 and len(waits) == 2
    server.inject([Fault.http(500, retry_after="0")] * 3)
    out = parse_output(model.generate_until([make_request("draw", {"protocol": "image_only"}, doc_id=1)])[0])
    assert out.failure.reason == "model_error"
    assert "EndpointError: giving up after 3 attempts: HTTP 500" in out.record.error


def test_replies_and_images_over_the_gates_limits_are_refused_at_once(model, server, waits, monkeypatch):
    monkeypatch.setenv("LMMS_EVAL_UNIFY_LIMITS", '{"image_pixels": 500}')
    with pytest.raises(Refused, match="32x24 pixels"):
        model.generate_image("a cat", [], seed=1)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_LIMITS", '{"image_bytes": 100}')
    with pytest.raises(EndpointError, match=r"^HTTP 200: reply refused: .*image_bytes"):
        model.generate_image("a cat", [], seed=1)
    assert len(server.requests_to("/v1/images/generations")) == 2 and waits == []


def test_an_echoed_key_is_redacted_and_no_key_is_sent_when_none_is_named(make, server, monkeypatch, tmp_path):
    server.add_route(
        "/v1/images/generations",
        lambda request: Reply(401, {"error": {"message": f"bad key {request.headers['authorization'][7:]}"}}),
    )
    with pytest.raises(EndpointError) as echoed:
        make().generate_image("a cat", [], seed=1)
    assert API_KEY not in str(echoed.value) and "HTTP 401" in str(echoed.value) and "[REDACTED]" in str(echoed.value)
    with OpenAICompatServer(_answer).serve_images() as open_server:
        keyless = OpenAIImage(base_url=open_server.base_url, api_key_env="none", output_dir=str(tmp_path))
        assert OpenAIImage.missing(keyless.settings) == []
        assert keyless.understand([], "now planning for step 3") == "Done."
        assert "authorization" not in open_server.requests_to()[0].headers


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
    assert len(edits) == 4 and all(len(e.body["files"]) >= 1 and "seed" in e.body["fields"] for e in edits)


@pytest.mark.slow
def test_a_cli_run_against_a_served_model_generates_and_scores_its_images(tmp_path, check_steps):
    """``lmms-eval --model openai_image --model_args base_url=…`` on the jigsaw task (two edits of three input
    images per item, then the answer) against the local server: exit 0, every sample's two images scored by
    (tiny) DreamSim, each item's seed sent with both of its edits."""
    from lmms_eval_unify.benchmarks import part
    from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import METRICS_ENV
    from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint

    part("uni_mmmu", "offline.data").generate(tmp_path / "data", 3, seed=4)
    (tmp_path / "dreamsim").mkdir()
    write_tiny_dreamsim_checkpoint(tmp_path / "dreamsim")
    dreamsim = {"backbone": TINY_DREAMSIM_TYPE, "weights": str(tmp_path / "dreamsim"), "device": "cpu"}
    env = offline_env(tmp_path / "data", TEST_KEY=API_KEY, **{METRICS_ENV: json.dumps({"dreamsim": dreamsim})})
    answer = fixed_reply('<FINAL_ANSWER_JSON>{"choice": 0, "rationale": "seams"}</FINAL_ANSWER_JSON>')
    out = tmp_path / "run"
    with OpenAICompatServer(answer, api_key=API_KEY, max_lifetime_s=900).serve_images() as server:
        model_args = (f"model=served/model,chat_model=vlm,base_url={server.base_url},api_key_env=TEST_KEY,"
                      "send_seed=true,size=64x64,timeout=60")  # fmt: skip
        command = [str(BIN / "lmms-eval"), "--model", "openai_image", "--model_args", model_args,
                   "--tasks", "uni_mmmu_jigsaw", "--output_path", str(out), "--log_samples"]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        edits = server.requests_to("/v1/images/edits")
    assert done.returncode == 0, done.stderr[-3000:]
    results = results_of(out)["uni_mmmu_jigsaw"]
    samples = samples_of(out, "uni_mmmu_jigsaw")
    assert len(samples) == 3 and results["invalid_outputs,none"] == 0
    for sample in samples:
        assert sample["invalid_outputs"] == "" and "image_failure" not in sample["details"]
        assert (
            isinstance(sample["details"]["distance"], float)
            and sample["img_score"] == 1 - sample["details"]["distance"]
        )
        check_steps(sample, "openai_image")  # our record, both step images on disk and decodable
    assert results["img_score,none"] == pytest.approx(sum(s["img_score"] for s in samples) / 3)
    # step 1 edits the three inputs, step 2 the three and step 1's image (the protocol's history)
    assert sorted(len(edit.body["files"]) for edit in edits) == [3, 3, 3, 4, 4, 4]
    assert sorted(Counter(edit.body["fields"]["seed"] for edit in edits).values()) == [2, 2, 2]


SNAPSHOT = "/models/hub/models--org--served/snapshots/" + "ab12" * 10


def test_model_json_records_what_the_servers_reveal_and_the_configuration_stays_the_same(make, server, tmp_path):
    """``model.json`` keeps ``describe()`` and adds, per server, the listed model with the revision of its snapshot
    path, the version and what replies revealed (headers, the ``model`` field); the media folder's name, and so
    the configuration, do not depend on any of it."""
    server.reveal(
        [{"id": "served/model", "owned_by": "vllm", "root": SNAPSHOT, "max_model_len": 4096}, {"id": "other"}],
        version="0.11.0",
        headers={"x-model-revision": "rev-7"},
    )
    model = make(endpoint="chat")
    server.serve_chat_images("content")
    model.generate_until([make_request("draw", {"protocol": "image_only"}), make_request("say", {})])
    saved = json.loads((model.media.root / "model.json").read_text(encoding="utf-8"))
    (entry,) = saved.pop("provenance")
    assert saved == json.loads(json.dumps(model.describe(), default=str))
    (facts,) = entry["servers"]
    assert facts["base_url"] == server.base_url and facts["version"] == "0.11.0"
    assert facts["models"] == [
        {"id": "served/model", "owned_by": "vllm", "root": SNAPSHOT, "max_model_len": 4096, "revision": "ab12" * 10}
    ]
    replies = facts["replies"]
    assert replies["header x-model-revision"] == ["rev-7"] and replies["model"] == ["served/model", "vlm"]
    assert replies["header server"][0].startswith("BaseHTTP")


def test_a_server_that_reveals_nothing_is_recorded_so_and_a_resumed_run_keeps_one_entry(make, server):
    model = make()
    model.generate_until([make_request("draw", {"protocol": "image_only"})])
    again = make()
    again.generate_until([make_request("draw", {"protocol": "image_only"})])  # resumed: the same facts
    assert again.media.root == model.media.root
    saved = json.loads((model.media.root / "model.json").read_text(encoding="utf-8"))
    (entry,) = saved["provenance"]
    (facts,) = entry["servers"]
    assert facts["models"] == [] and facts["version"].startswith("not revealed: HTTP 404")
    server.reveal([], version="0.12.0")
    third = make()
    third.generate_until([make_request("draw again", {"protocol": "image_only"}, doc_id=1)])
    entries = json.loads((model.media.root / "model.json").read_text(encoding="utf-8"))["provenance"]
    versions = [entry["servers"][0]["version"] for entry in entries]
    assert versions[0].startswith("not revealed") and versions[1:] == ["0.12.0"]


def test_provenance_reaches_the_leaderboard_manifest(make, server, tmp_path):
    """What a run learnt of its server is read back with its configuration and written into each row."""
    from lmms_eval_unify.reports.manifest import row_record
    from lmms_eval_unify.reports.results_io import ModelResults, configuration

    server.reveal([{"id": "served/model", "root": SNAPSHOT}], version="0.11.0")
    model = make()
    response = model.generate_until([make_request("draw", {"protocol": "image_only"})])[0]
    results_file = tmp_path / "run" / "x_results.json"
    described, _, provenance = configuration({"config": {"model": "openai_image"}}, results_file,
                                             [{"filtered_resps": [response]}])  # fmt: skip
    assert described == json.loads(json.dumps(model.describe(), default=str))  # no provenance in the configuration
    row = row_record(ModelResults("openai_image", configuration=described, provenance=provenance))
    assert row["provenance"][0]["servers"][0]["models"][0]["revision"] == "ab12" * 10


def test_a_secret_in_the_model_arguments_is_sent_but_never_written(make, server, tmp_path, monkeypatch):
    """``extra_body={"api_key": …}`` reaches the server as sent; describe(), model.json and every record hold its
    keyed hash instead."""
    monkeypatch.setenv("LMMS_EVAL_UNIFY_CACHE", str(tmp_path / "cache"))
    secret = "sk-provider-77aa88bb99cc"
    model = make(extra_body=json.dumps({"api_key": secret, "steps": 2}))
    (response,) = model.generate_until([make_request("draw", {"protocol": "image_only"})])
    assert parse_output(response).failure is None, response
    (request,) = server.requests_to("/v1/images/edits")
    assert request.body["fields"]["api_key"] == secret and request.body["fields"]["steps"] == "2"
    assert secret not in json.dumps(model.describe()) and model.describe()["extra_body"]["steps"] == 2
    written = b"".join(path.read_bytes() for path in model.media.root.rglob("*") if path.is_file())
    assert secret.encode() not in written and b"[REDACTED:" in written
