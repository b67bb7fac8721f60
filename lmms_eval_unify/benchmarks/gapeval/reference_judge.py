"""A stand-in for GapEval's GPT-5-class judge on the offline items, as an answer policy of the local test
server (``lmms_eval_unify.testing.openai_server``).

Understanding prompts: the answer is correct iff it equals the reference text (case, spacing and final
punctuation ignored) - the offline answers are short exact strings. Generation prompts: the anti-plagiarism
rule first (a near pixel copy of ``[Reference_Image]`` scores 0), then the generated image is correct iff it
shows the same number of blobs of each palette colour as the reference (``render.colour_counts``), which is
what the offline items' answers are. It agrees with the ground truth on the offline items only; it is no
substitute for a real judge on real data.
"""

from __future__ import annotations

import base64
import io
import json
import re

from PIL import Image

from lmms_eval_unify.benchmarks.gapeval.render import colour_counts, is_copy
from lmms_eval_unify.testing.openai_server import DATA_URL_RE, ChatRequest

_UND = re.compile(r"Here is the answer: (?P<answer>.*?)\nHere is the reference answer: (?P<reference>.*?)\n"
                  r"Please judge", re.DOTALL)  # fmt: skip


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!")


def labelled_images(request: ChatRequest) -> dict[str, Image.Image]:
    """The first user turn's images by the label line before each (``[Image]``, ``[Reference_Image]`` ...)."""
    user = next(m for m in request.messages if m.get("role") == "user")
    label = ""
    out: dict[str, Image.Image] = {}
    for part in user["content"] if isinstance(user["content"], list) else []:
        if part.get("type") == "text":
            label = part["text"].strip().splitlines()[-1] if part["text"].strip() else ""
        elif part.get("type") == "image_url" and (match := DATA_URL_RE.match(part["image_url"]["url"])):
            out.setdefault(label, Image.open(io.BytesIO(base64.b64decode(match["data"]))).convert("RGB"))
    return out


def verdict(request: ChatRequest) -> str:
    """The judge reply for one request (``judge_invalid`` material when the prompt is not GapEval's)."""
    first_turn = request.texts("user")
    text = "\n".join(first_turn)
    if (und := _UND.search(text)) is not None:
        ok = _normal(und["answer"]) == _normal(und["reference"])
        return json.dumps({"reason": "answer equals reference" if ok else "answer differs", "score": int(ok)})
    images = labelled_images(request)
    if "[Image]" not in images or "[Reference_Image]" not in images:
        return "I cannot judge this."
    generated, reference = images["[Image]"], images["[Reference_Image]"]
    if is_copy(generated, reference):
        return json.dumps({"reason": "plagiarism: copy of the reference image", "score": 0})
    ok = colour_counts(generated) == colour_counts(reference)
    return json.dumps({"reason": "same content" if ok else "different content", "score": int(ok)})
