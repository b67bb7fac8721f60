"""lmms-eval's own unified models (``ovis_u1``, ``illume_plus``, ``mmada``, ``bagel_unig2u``) as one adapter.

``--model upstream --model_args upstream=mmada,upstream_args='{"generation_timesteps": 15}'`` builds the
upstream class once, through lmms-eval's registry (``get_model(name, force_simple=True)``), and serves the
primitives with its own methods: ``understand`` sends it one ``Instance`` whose ``doc_to_visual`` returns the
given images and reads the plain text (or the ``text`` of a JSON reply); ``generate_image`` asks for an image
the way that model gives one (:data:`UPSTREAMS`, one row per model: a mode, ``gen_kwargs``, which method) and
reads the image file it reports or writes through the read gate, confined to its output folder. Every output
folder the upstream class takes is pointed into this configuration's media folder.
"""

from __future__ import annotations

import importlib.util
import inspect
import io
import json
import os
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from lmms_eval.api.instance import Instance, unwrap_generation_output
from PIL import Image

from lmms_eval_unify.adapter import (
    DECODE_ERRORS,
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelArgumentError,
    ModelSettings,
    Refused,
    UnifiedModel,
    check_image_bytes,
    missing_code,
    missing_device,
    missing_weights,
    parse_json,
    read_bytes,
    run_only,
    seeded,
)

from .composed import nested_args
from .hf_common import TEXT_ONLY_GENERATION_NOTE, OnceLogger
from .official_code import checkout_commit

MODEL_ID = "upstream"
REQUEST_TASK, REQUEST_SPLIT = "lmms_eval_unify_upstream", "test"
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp"})
DOCS = "docs/models/upstream.md"


class UpstreamUnavailable(RuntimeError):
    """lmms-eval cannot load the upstream class, or the class cannot import its model's own code."""


class UpstreamOutputError(RuntimeError):
    """The upstream model reported no image, or an image the read gate refuses."""


@dataclass(frozen=True)
class ModeSwitch:
    """An attribute the upstream ``generate_until`` reads on every call to choose between answering and drawing
    (set by ``__init__`` from the constructor argument of the same name); the bridge sets it before each call."""

    attribute: str
    understanding: object
    generation: object


@dataclass(frozen=True)
class ImageRoute:
    """How the upstream class is asked for one image.

    ``method`` gets one request carrying ``gen_kwargs`` (``generate_visual_cot`` is its two-stage GtA route);
    ``tagged`` wraps the prompt in the GtA tags (``[GEN_PROMPT]prompt[/GEN_PROMPT][QUESTION][/QUESTION]``);
    ``reply`` says where the image comes back: ``json``, the first path of its ``{"text", "images"}`` reply, or
    ``folder``, the image file the call wrote under its output folders (the reply, a stage-2 answer, is
    dropped). ``input_images``: how many input images the route reads (``1``: the last is sent)."""

    method: str
    reply: Literal["json", "folder"]
    gen_kwargs: Mapping[str, Any] = field(default_factory=dict)
    tagged: bool = False
    input_images: int | None = None


@dataclass(frozen=True)
class Weights:
    """Weights the upstream class loads: named by its constructor ``argument`` (``None``: an id fixed in its
    code), ``default`` when not given, ``files`` their folder or cached snapshot holds; ``folder_only``: the
    class joins file names to the value, so only a local folder works."""

    argument: str | None
    default: str | None
    files: tuple[str, ...] = ("config.json",)
    folder_only: bool = False


@dataclass(frozen=True)
class Checkout:
    """The model's own repository (not on PyPI) the upstream class imports from when it is built: ``folder`` is
    where lmms-eval's module looks for it (relative to the ``lmms_eval`` package folder), ``import_root`` the
    sub-folder that goes on ``sys.path``, ``modules`` what is imported from there."""

    url: str
    folder: str
    import_root: str
    modules: tuple[str, ...]


@dataclass(frozen=True)
class Convention:
    """How one lmms-eval unified model is driven, read in ``lmms_eval/models/simple/<name>.py`` of lmms-eval
    0.7.3 (``tests/model_adapters/test_upstream.py`` checks every row against that source)."""

    pretrained: Weights
    folder_arguments: tuple[str, ...]
    """Constructor arguments naming folders it writes (default ``./logs/...``): each points into the media folder."""
    fixed_arguments: Mapping[str, Any]
    """Constructor arguments the bridge sets (:data:`FIXED_WHY`)."""
    text_to_image: ImageRoute
    edit: ImageRoute | None
    """``None``: it cannot edit; input images of a generation request are not given to it (logged once)."""
    mode: ModeSwitch | None = None
    default_arguments: Mapping[str, Any] = field(default_factory=dict)
    extra_weights: tuple[Weights, ...] = ()
    understanding_images: int | None = None
    """How many input images ``generate_until`` answers about (``1``: only the first, and it answers ``""``
    without one); ``None``: all of them."""
    seed_attribute: str | None = None
    """The attribute its calls seed from (set to each sample's seed); without one, calls run under ``seeded``."""
    checkout: Checkout | None = None
    packages: tuple[str, ...] = ()
    """Python packages its model code imports beyond lmms-eval's own requirements."""
    needs_cuda: bool = False
    placeholder_fills: tuple[tuple[int, int, int], ...] = ()
    """Flat colours it saves instead of an image when decoding fails or is off: refused, never scored."""


FIXED_WHY = {
    "continual_mode": "its response cache keys answers by task and doc id, which the bridge makes up per call "
    "(resuming finished samples is the core's)",
    "fail_gracefully": "its errors must reach the core, which records them per sample, not become empty answers",
    "stage2_max_new_tokens": "the stage-2 answer of its GtA route is dropped (the bridge answers through "
    "understand), so it is cut to one token",
}
"""Why the bridge fixes each of these constructor arguments."""

NO_RESPONSE_CACHE = {"continual_mode": False}
RAISE_ERRORS = {"fail_gracefully": False}
SHORT_STAGE_TWO = {"stage2_max_new_tokens": 1}
JSON_REPLY = ImageRoute("generate_until", "json")
GTA_ROUTE = ImageRoute("generate_visual_cot", "folder", {"visual_cot": True}, tagged=True, input_images=1)
TAGGED_ROUTE = ImageRoute("generate_visual_cot", "folder", tagged=True)
ANSWER_OR_DRAW = ModeSwitch("mode", "understanding", "generation")

UPSTREAMS: dict[str, Convention] = {
    "ovis_u1": Convention(
        pretrained=Weights("pretrained", "AIDC-AI/Ovis-U1-3B"),
        folder_arguments=("output_dir", "intermediate_dir"),
        fixed_arguments={**RAISE_ERRORS, **SHORT_STAGE_TWO},
        text_to_image=GTA_ROUTE,
        edit=GTA_ROUTE,
    ),
    "illume_plus": Convention(
        pretrained=Weights("pretrained", "ILLUME-MLLM/illume_plus-qwen2_5-7b-hf"),
        folder_arguments=("output_dir", "intermediate_dir"),
        fixed_arguments={**RAISE_ERRORS, **SHORT_STAGE_TWO},
        text_to_image=TAGGED_ROUTE,
        edit=TAGGED_ROUTE,
        mode=ModeSwitch("enable_visual_cot", False, True),
        default_arguments={"enable_image_decoding": True},
        extra_weights=(
            Weights("tokenizer_config_path", "ILLUME-MLLM/dualvitok"),
            Weights("diffusion_decoder_path", "ILLUME-MLLM/dualvitok-sdxl-decoder", files=()),
        ),
        checkout=Checkout(
            "https://github.com/illume-unified-mllm/ILLUME_plus",
            "ILLUME_plus",
            "ILLUME",
            ("generation_eval.models.inference_utils",),
        ),
        placeholder_fills=((128, 128, 128), (200, 200, 200)),
    ),
    "mmada": Convention(
        pretrained=Weights("pretrained", "Gen-Verse/MMaDA-8B-MixCoT"),
        folder_arguments=("response_persistent_folder", "output_image_dir"),
        fixed_arguments=NO_RESPONSE_CACHE,
        text_to_image=JSON_REPLY,
        edit=None,
        mode=ANSWER_OR_DRAW,
        extra_weights=(Weights(None, "showlab/magvitv2", files=()),),
        understanding_images=1,
        seed_attribute="seed",
        checkout=Checkout(
            "https://github.com/Gen-Verse/MMaDA",
            "../MMaDA",
            "",
            ("models", "training.prompting_utils", "training.utils", "generate"),
        ),
    ),
    "bagel_unig2u": Convention(
        pretrained=Weights(
            "pretrained",
            None,
            files=("llm_config.json", "vit_config.json", "ae.safetensors", "ema.safetensors"),
            folder_only=True,
        ),
        folder_arguments=("response_persistent_folder", "output_image_dir", "intermediate_dir"),
        fixed_arguments={**NO_RESPONSE_CACHE, **RAISE_ERRORS, **SHORT_STAGE_TWO},
        text_to_image=JSON_REPLY,
        edit=GTA_ROUTE,
        mode=ANSWER_OR_DRAW,
        understanding_images=1,
        seed_attribute="seed",
        checkout=Checkout(
            "https://github.com/ByteDance-Seed/Bagel",
            "../Bagel",
            "",
            (
                "inferencer",
                "modeling.bagel",
                "modeling.autoencoder",
                "modeling.qwen2",
                "data.data_utils",
                "data.transforms",
            ),
        ),
        packages=("flash_attn",),
        needs_cuda=True,
    ),
}
"""Each supported lmms-eval model and how it is driven."""


@dataclass(frozen=True, kw_only=True)
class UpstreamSettings(ModelSettings):
    upstream: str
    """The lmms-eval model: a key of :data:`UPSTREAMS`."""
    pretrained: str | None = None
    """Its weights (``None``: the upstream default; ``bagel_unig2u`` has none)."""
    upstream_args: dict[str, Any] = nested_args()
    """More arguments of the upstream constructor: a JSON object (``'{"stage1_guidance_scale": 4.0}'``),
    ``"k=v,k2=v2"`` in quotes, or ``k=v;k2=v2``."""
    repo_path: str | None = run_only()
    """A checkout of the model's own code, put first on ``sys.path`` (else the folder lmms-eval looks in)."""


def bridge_arguments(row: Convention) -> dict[str, str]:
    """The upstream arguments the bridge owns, each with the reason ``upstream_args`` may not set it."""
    owned = {"pretrained": "pass it as the model argument pretrained"}
    owned |= {name: "the bridge points it into the media folder" for name in row.folder_arguments}
    owned |= {name: FIXED_WHY[name] for name in row.fixed_arguments}
    if row.mode:
        owned[row.mode.attribute] = "the bridge switches it per call between answering and drawing"
    if row.seed_attribute:
        owned[row.seed_attribute] = "the bridge sets it per sample from the seed model argument"
    return owned


def convention_of(settings: UpstreamSettings) -> Convention:
    """The row of ``settings.upstream``; ``ModelArgumentError`` for a model without one and for ``upstream_args``
    the bridge sets itself."""
    row = UPSTREAMS.get(settings.upstream)
    if row is None:
        raise ModelArgumentError(f"{MODEL_ID}: upstream={settings.upstream!r} is not one of {sorted(UPSTREAMS)}")
    owned = bridge_arguments(row)
    clashes = [f"{name} ({owned[name]})" for name in sorted(set(settings.upstream_args) & set(owned))]
    if clashes:
        raise ModelArgumentError(f"{MODEL_ID}: upstream_args may not set {'; '.join(clashes)}")
    return row


def upstream_label(name: str) -> str:
    return f"{MODEL_ID}={name}"


def load_upstream_class(name: str) -> type:
    """The upstream class as lmms-eval builds it (its registry, the *simple* variant); ``UpstreamUnavailable``
    naming the reason when lmms-eval cannot load it."""
    from lmms_eval.models import get_model

    try:
        return get_model(name, force_simple=True)
    except Exception as exc:  # unknown names and failing imports alike
        raise UpstreamUnavailable(
            f"{upstream_label(name)}: lmms-eval cannot load its model class ({type(exc).__name__}: {exc}); "
            f"install what lmms-eval's module imports ({DOCS})"
        ) from exc


def lmms_eval_folder() -> Path:
    """The installed ``lmms_eval`` package folder (found without importing it)."""
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or spec.origin is None:
        raise UpstreamUnavailable("lmms-eval is not installed")
    return Path(spec.origin).parent


def checkout_root(settings: UpstreamSettings, checkout: Checkout) -> Path:
    """The checkout ``repo_path`` names, else the folder lmms-eval's module looks in."""
    location = Path(settings.repo_path).expanduser() if settings.repo_path else lmms_eval_folder() / checkout.folder
    return location.resolve()


def has_module(root: Path, dotted: str) -> bool:
    """Whether ``root`` holds the module ``dotted`` (a ``.py`` file or a package), found without importing it."""
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def missing_upstream_code(settings: UpstreamSettings, row: Convention) -> list[Missing]:
    """lmms-eval's module of the model (importable, with its class), the packages and the checkout its model code
    imports from."""
    from lmms_eval.models import MODEL_REGISTRY_V2

    label = upstream_label(settings.upstream)
    try:
        class_path = MODEL_REGISTRY_V2.resolve(settings.upstream, force_simple=True).class_path
    except ValueError as exc:
        return [Missing("code", f"{label}: lmms-eval has no such model ({exc})", "install lmms-eval==0.7.3")]
    module, _, class_name = class_path.rpartition(".")
    found = missing_code(label, module, (class_name,), f"install what lmms-eval's {module} imports ({DOCS})")
    for package in row.packages:
        found += missing_code(label, package, install=f"pip install {package} (on a machine with CUDA)")
    if row.checkout is None:
        return found
    checkout = row.checkout
    base = checkout_root(settings, checkout) / checkout.import_root
    absent = [name for name in checkout.modules if not has_module(base, name)]
    if absent:
        given = "repo_path" if settings.repo_path else "the folder lmms-eval looks in"
        default = (lmms_eval_folder() / checkout.folder).resolve()
        what = f"{label} imports {', '.join(absent)} from {checkout.url} (not on PyPI): {base} ({given}) lacks them"
        fix = f"git clone {checkout.url} {default}, or clone it anywhere and pass --model_args repo_path=<checkout>"
        found.append(Missing("code", what, fix))
    return found


def missing_upstream_weights(settings: UpstreamSettings, row: Convention) -> list[Missing]:
    """``pretrained`` (a folder, or a Hub id in the cache when offline) and the other weights the class loads."""
    label = upstream_label(settings.upstream)
    pretrained = settings.pretrained or row.pretrained.default
    if row.pretrained.folder_only and pretrained and not Path(pretrained).expanduser().is_dir():
        what = f"{label} loads its weights from a local folder (it joins file names to pretrained): {pretrained!r}"
        fix = f"download them into a folder holding {', '.join(row.pretrained.files)}; pass pretrained=<folder>"
        found = [Missing("weights", f"{what} is not one", fix)]
    else:
        found = missing_weights(label, pretrained, files=row.pretrained.files)
    for weights in row.extra_weights:
        found += [replace(item, fix=_weights_fix(item.fix, weights)) for item in _missing_extra(settings, weights)]
    return found


EXTRA_ARGUMENT = "upstream_args.{}"
"""How :func:`missing_weights` names an upstream argument in its messages (its fix is rewritten)."""


def _missing_extra(settings: UpstreamSettings, weights: Weights) -> list[Missing]:
    label, argument = upstream_label(settings.upstream), EXTRA_ARGUMENT.format(weights.argument)
    location = settings.upstream_args.get(weights.argument, weights.default) if weights.argument else weights.default
    return missing_weights(label, location, argument=argument, files=weights.files)


def _weights_fix(fix: str, weights: Weights) -> str:
    """A fix of :func:`missing_weights` for weights the upstream class loads besides ``pretrained``: set through
    ``upstream_args``, or, for an id fixed in its code, supplied by the Hugging Face cache only."""
    alternative = f"--model_args {EXTRA_ARGUMENT.format(weights.argument)}=<folder>"
    if weights.argument is None:
        return fix.replace(f", or pass {alternative}", "")
    return fix.replace(alternative, f"""--model_args upstream_args='{{"{weights.argument}": "<folder>"}}'""")


def reply_text(reply: str) -> str:
    """An answer as text: the ``text`` of a ``{"text", "images"}`` reply, else the reply itself."""
    try:
        value = json.loads(reply)
    except (ValueError, RecursionError):
        return reply
    if isinstance(value, dict) and set(value) == {"text", "images"} and isinstance(value["text"], str):
        return value["text"]
    return reply


def written_files(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every file under ``folder`` (symlinks listed, not followed) with what changes when it is rewritten."""
    state = {}
    for directory, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            state[path] = (info.st_ino, info.st_size, info.st_mtime_ns)
    return state


def _doc_images(doc: list[Image.Image]) -> list[Image.Image]:
    return list(doc)


class Upstream(UnifiedModel):
    """One of lmms-eval's unified models, driven through its own ``generate_until``/``generate_visual_cot``."""

    model_id = MODEL_ID
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = UpstreamSettings
    settings: UpstreamSettings

    @classmethod
    def missing(cls, settings: UpstreamSettings) -> list[Missing]:
        row = convention_of(settings)
        return [
            *missing_upstream_code(settings, row),
            *missing_upstream_weights(settings, row),
            *missing_device(upstream_label(settings.upstream), settings.device, needs_cuda=row.needs_cuda),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self.convention = convention_of(self.settings)
        self.label = upstream_label(self.settings.upstream)
        self.max_input_images = self.convention.understanding_images
        self.upstream_class = load_upstream_class(self.settings.upstream)
        self._notes = OnceLogger()
        # every folder of the upstream class points here, and its images are read from here only
        self.outputs = self.media.root / "upstream" / f"rank{self.rank}"
        self.upstream = self._build_upstream()

    def upstream_arguments(self) -> dict[str, Any]:
        """The upstream constructor's arguments: the row's defaults, ``upstream_args``, then what the bridge owns
        (weights, output folders, fixed arguments); ``device`` follows ours unless ``upstream_args`` names one."""
        settings, row = self.settings, self.convention
        pretrained = settings.pretrained or row.pretrained.default
        if pretrained is None:
            raise ModelArgumentError(f"{self.label} has no default weights: pass pretrained=<folder> ({DOCS})")
        arguments = {
            **row.default_arguments,
            **{weights.argument: weights.default for weights in row.extra_weights if weights.argument},
            **settings.upstream_args,
            "pretrained": pretrained,
            **{name: str(self.outputs / name) for name in row.folder_arguments},
            **row.fixed_arguments,
        }
        takes_device = "device" in inspect.signature(self.upstream_class).parameters
        if takes_device and "device" not in settings.upstream_args:
            arguments["device"] = str(self.device)
        return arguments

    def _build_upstream(self) -> Any:
        checkout = self.convention.checkout
        if self.settings.repo_path and checkout:
            import_root = str(checkout_root(self.settings, checkout) / checkout.import_root)
            if import_root not in sys.path:
                sys.path.insert(0, import_root)
        arguments = self.upstream_arguments()
        self.outputs.mkdir(parents=True, exist_ok=True)
        try:
            return self.upstream_class(**arguments)
        except ImportError as exc:
            fix = f"clone {checkout.url} and pass repo_path=<checkout>" if checkout else "install what it imports"
            raise UpstreamUnavailable(f"{self.label} cannot import its model code ({exc}); {fix} ({DOCS})") from exc

    def provenance(self) -> dict[str, Any]:
        """The upstream class, lmms-eval's version and, for a model built from a git checkout, its commit."""
        found: dict[str, Any] = {
            "upstream_class": f"{self.upstream_class.__module__}.{self.upstream_class.__qualname__}",
            "lmms_eval": metadata.version("lmms-eval"),
        }
        if self.convention.checkout:
            root = checkout_root(self.settings, self.convention.checkout)
            found["checkout"] = str(root)
            found["checkout_commit"] = checkout_commit(root) if root.is_dir() else None
        return found

    # ---- primitives -------------------------------------------------------------------------------------
    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        reads = self.convention.understanding_images
        if reads is not None and not 0 < len(images) <= reads:
            raise ValueError(
                f"{self.label} answers about exactly {reads} image(s) (lmms-eval's class reads the first, and answers "
                f"'' without one); this request has {len(images)}, so protocols that answer about a generated image "
                f"(generate-then-answer, step loops) cannot run through it"
            )
        options = {key: value for key, value in decoding.items() if key not in ("seed", "phase")}
        seed = int(decoding.get("seed", self.seed))
        return reply_text(self._ask("generate_until", prompt, images, options, generating=False, seed=seed))

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        """The image the upstream model draws for ``prompt`` (an edit of ``images`` when it edits), read back from
        the path it reports or the file it wrote."""
        row = self.convention
        route = row.edit if images and row.edit else row.text_to_image
        inputs = list(images) if images and row.edit else []
        if images and not row.edit:
            self._notes.warn(TEXT_ONLY_GENERATION_NOTE.format(model=self.label, n=len(images)))
        if route.input_images is not None:
            inputs = inputs[-route.input_images :]
        context = f"[GEN_PROMPT]{prompt}[/GEN_PROMPT][QUESTION][/QUESTION]" if route.tagged else prompt
        before = written_files(self.outputs)
        seed = int(decoding["seed"])
        reply = self._ask(route.method, context, inputs, dict(route.gen_kwargs), generating=True, seed=seed)
        path = self._reported_image(reply) if route.reply == "json" else self._written_image(before)
        return self._read_image(path)

    # ---- the upstream call and its outputs --------------------------------------------------------------
    def _ask(
        self, method: str, context: str, images: list[Image.Image], gen_kwargs: dict, generating: bool, seed: int
    ) -> str:
        """The upstream reply to one request (a fresh doc id holding ``images``), in the mode asked for."""
        row, upstream = self.convention, self.upstream
        doc_id = uuid.uuid4().hex
        upstream.task_dict = {REQUEST_TASK: {REQUEST_SPLIT: {doc_id: list(images)}}}
        if row.mode:
            setattr(upstream, row.mode.attribute, row.mode.generation if generating else row.mode.understanding)
        if row.seed_attribute:
            setattr(upstream, row.seed_attribute, seed)
        request = Instance(
            request_type=method,  # generate_visual_cot too: lmms-eval dispatches requests by this name
            arguments=(context, gen_kwargs, _doc_images, doc_id, REQUEST_TASK, REQUEST_SPLIT),
            idx=0,
            metadata={"task": REQUEST_TASK, "doc_id": doc_id, "repeats": 1},
        )
        with seeded(seed, self.device):
            replies = getattr(upstream, method)([request])
        text, _ = unwrap_generation_output(replies[0])
        if not isinstance(text, str):
            raise UpstreamOutputError(f"{self.label} replied {type(text).__name__}, not text")
        return text

    def _reported_image(self, reply: str) -> str:
        """The first path of a ``{"text", "images": [paths]}`` reply."""
        value = parse_json(reply, f"{self.label}'s reply")
        paths = value.get("images") if isinstance(value, dict) else None
        if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
            raise UpstreamOutputError(f"{self.label} did not reply {{'text', 'images': [paths]}}: {reply[:200]!r}")
        if not paths:
            raise UpstreamOutputError(f"{self.label} reported no image (its log says why): {reply[:200]!r}")
        return paths[0]

    def _written_image(self, before: dict[str, tuple[int, int, int]]) -> str:
        """The image file (first by name) the call wrote or rewrote under the upstream's folders."""
        after = written_files(self.outputs)
        written = sorted(
            path
            for path, state in after.items()
            if before.get(path) != state and Path(path).suffix.lower() in IMAGE_SUFFIXES
        )
        if not written:
            raise UpstreamOutputError(f"{self.label} wrote no image under {self.outputs} (its log says why)")
        return written[0]

    def _read_image(self, path: str) -> Image.Image:
        """An image file the upstream reported or wrote, through the gate: inside its output folder (symlinks
        resolved), a regular file within the image limits, a whole image, not one of its placeholders."""
        try:
            data = read_bytes(path, "image", [self.outputs], f"the bridge reads images only under {self.outputs}")
            check_image_bytes(data, path)
            decoded = Image.open(io.BytesIO(data))
            decoded.load()
        except Refused as refused:
            raise UpstreamOutputError(f"{self.label} reported an image the gate refuses: {refused}") from None
        except DECODE_ERRORS as exc:
            raise UpstreamOutputError(
                f"{self.label} reported {path}, which is not a whole image: {type(exc).__name__}: {exc}"
            ) from None
        image = decoded.convert("RGB")
        bands = [image.getchannel(band).getextrema() for band in range(3)]
        for fill in self.convention.placeholder_fills:
            if all(low == high == value for (low, high), value in zip(bands, fill, strict=True)):
                raise UpstreamOutputError(
                    f"{self.label} saved its placeholder (flat {fill}) at {path}, not a generated image: it does so "
                    "when image decoding is off or fails (its log says which)"
                )
        return image
