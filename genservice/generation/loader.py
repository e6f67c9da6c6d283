"""Load a local Hugging Face model directory for generation: a causal LM or a vision-language model.

Nothing is downloaded: every load is `local_files_only`. A causal LM comes with its tokenizer; an
image-text-to-text model (LLaVA, Qwen2-VL, ...) with its processor, built on the PIL image
backend so that torchvision is never imported. `weights_sha256` identifies the exact weights in
provenance records.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from genservice.device import ATTENTION, model_dtype

DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[1] / "models" / "tiny"
TRAIN_HINT = "train it with `genservice train sft --config training/configs/tiny.yaml`"
TEXT_ONLY = "this model takes text only; drop --image or use a vision-language model"
KINDS = ("causal", "vlm")


class ModelNotFoundError(FileNotFoundError):
    """No usable model directory at the given path; the message says what to do."""


def default_model_dir() -> Path:
    """The directory of the tiny model shipped in the package (genservice/models/tiny)."""
    return DEFAULT_MODEL_DIR


def check_model_dir(path: Path | str) -> Path:
    """The model directory, resolved; ModelNotFoundError saying how to get one if it is absent."""
    folder = Path(path).expanduser()
    shipped = folder.resolve() == DEFAULT_MODEL_DIR
    if not (folder / "config.json").is_file():
        if shipped:
            raise ModelNotFoundError(f"the shipped model is missing at {folder}; {TRAIN_HINT}")
        what = "has no config.json" if folder.is_dir() else "does not exist"
        raise ModelNotFoundError(
            f"model directory {folder} {what}; give a local Hugging Face model directory "
            "(config.json, tokenizer and *.safetensors)"
        )
    if not any(folder.glob("*.safetensors")):
        raise ModelNotFoundError(f"model directory {folder} holds no *.safetensors weights")
    return folder.resolve()


def model_kind(path: Path | str) -> str:
    """ "vlm" for an image-text-to-text model, else "causal", read from config.json only."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    config = AutoConfig.from_pretrained(check_model_dir(path), local_files_only=True)
    return "vlm" if config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES else "causal"


@dataclass(eq=False)
class LoadedModel:
    """A model ready to sample from: the model, its tokenizer (and processor for a VLM)."""

    model: Any
    tokenizer: Any
    processor: Any | None
    kind: str
    model_id: str
    path: Path
    device: str
    eos_token_ids: tuple[int, ...]
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def accepts_images(self) -> bool:
        """Whether images can go with the prompt."""
        return self.kind == "vlm"

    @cached_property
    def weights_sha256(self) -> str:
        """sha256 identifying the weights (see weights_sha256())."""
        return weights_sha256(self.path)

    @cached_property
    def retrieval(self) -> Any:
        """The model's solved-example index (an ExampleIndex), or None when it has none."""
        from genservice.generation.retrieval import ExampleIndex

        return ExampleIndex.load(self.path)

    @cached_property
    def gallery(self) -> Any:
        """The model's picture gallery (a gallery.Gallery), or None when it has none."""
        from genservice.generation.gallery import Gallery

        return Gallery.load(self.path)

    @cached_property
    def reads_look_alikes(self) -> bool:
        """Whether a picture request's prompt shows the gallery's closest part (gallery.py)."""
        from genservice.generation.gallery import reads_look_alikes

        return self.gallery is not None and reads_look_alikes(self.path)

    def look_alike(self, domain: str, prompt: str, pictures: Any, found: Any = None) -> str | None:
        """The look-alike program this model is shown with a new request's pictures (a list of
        pictures or an image_match target), or None when it reads none; `found` reuses a
        gallery look-up (gallery.Retrieved, best first) already made for the request."""
        if not (self.reads_look_alikes and domain in ("cad", "scene")):
            return None
        from genservice.generation.gallery import look_alike_program
        from genservice.generation.image_match import as_target

        if found is None:
            if not pictures:
                return None
            target = as_target(list(pictures)) if isinstance(pictures, list | tuple) else pictures
            found = self.gallery.nearest(target, domain, 1)
        shown = look_alike_program(found, prompt)
        return shown[0] if shown is not None else None

    def messages(
        self,
        domain: str,
        prompt: str,
        previous_program: str | None = None,
        instruction: str | None = None,
        images: int = 0,
        exclude: tuple[str, ...] = (),
        look_alike: str | None = None,
    ) -> list[dict[str, Any]]:
        """Chat messages for a request to this model (with a retrieved example if it uses one,
        or the look-alike program of its picture: look_alike())."""
        from genservice.generation.retrieval import request_messages

        return request_messages(
            self.tokenizer, self.retrieval, domain, prompt, previous_program, instruction,
            images, exclude, look_alike=look_alike,
        )  # fmt: skip

    def check_images(self, count: int) -> None:
        """Raise ValueError when images are given to a text-only model."""
        if count and not self.accepts_images:
            raise ValueError(TEXT_ONLY)


def load_model(
    path: Path | str,
    device: str = "cpu",
    dtype: Any | None = None,
) -> LoadedModel:
    """Load a local model directory (causal LM or VLM) in eval mode on `device`."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder = check_model_dir(path)
    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    kind = model_kind(folder)
    if dtype is None:
        dtype = model_dtype(device)
    processor = None
    model: Any
    if kind == "vlm":
        from transformers import AutoModelForImageTextToText

        processor = load_processor(folder)
        tokenizer = processor.tokenizer
        model = AutoModelForImageTextToText.from_pretrained(
            folder, local_files_only=True, dtype=dtype, attn_implementation=ATTENTION
        )
    else:
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            folder, local_files_only=True, dtype=dtype, attn_implementation=ATTENTION
        )
    model.to(device)
    model.eval()
    model_id = getattr(config, "name_or_path", "") or ""
    if not model_id or Path(model_id).expanduser().resolve() == folder:
        model_id = folder.name
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        processor=processor,
        kind=kind,
        model_id=model_id,
        path=folder,
        device=str(device),
        eos_token_ids=_eos_ids(model, tokenizer),
    )


def load_processor(folder: Path) -> Any:
    """The VLM's processor with PIL image processing (torchvision is never imported).

    transformers builds a Qwen2-VL-style processor only with its video processor, which needs
    torchvision; for those models an images-only stand-in (GridImageProcessor) is used instead.
    """
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(folder, local_files_only=True, backend="pil")
    except (ImportError, ValueError, TypeError, KeyError, AttributeError) as exc:
        failure = exc
    try:
        return GridImageProcessor.from_pretrained(folder)
    except ValueError as exc:
        raise ValueError(
            f"cannot build a processor (PIL image backend) for the vision-language model at "
            f"{folder}: {failure}; {exc}"
        ) from failure


class GridImageProcessor:
    """Images-only processor for Qwen2-VL-style models: image patches, placeholder expansion and
    `mm_token_type_ids` (without them Qwen2-VL places the image tokens wrongly)."""

    def __init__(self, image_processor: Any, tokenizer: Any, image_token: str, chat_template: str):
        self.image_processor = image_processor
        self.tokenizer = tokenizer
        self.image_token = image_token
        self.image_token_id = tokenizer.convert_tokens_to_ids(image_token)
        self.chat_template = chat_template

    @classmethod
    def from_pretrained(cls, folder: Path) -> GridImageProcessor:
        """Build from a model directory (preprocessor_config.json, tokenizer, chat template)."""
        from transformers import AutoConfig, AutoImageProcessor, AutoTokenizer

        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        image_processor = AutoImageProcessor.from_pretrained(
            folder, local_files_only=True, backend="pil"
        )
        if not hasattr(image_processor, "merge_size") or config.image_token_id is None:
            raise ValueError("its image processor is not a Qwen2-VL-style one (no merge_size)")
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        template = _processor_chat_template(folder) or tokenizer.chat_template
        if not template:
            raise ValueError("it has no chat template")
        token = str(tokenizer.convert_ids_to_tokens(config.image_token_id))
        return cls(image_processor, tokenizer, token, template)

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        """The tokenizer's apply_chat_template with the processor's template."""
        return self.tokenizer.apply_chat_template(
            messages, chat_template=self.chat_template, **kwargs
        )

    def __call__(
        self,
        text: list[str],
        images: list[Any] | None = None,
        return_tensors: str = "pt",
        add_special_tokens: bool = False,
    ) -> dict[str, Any]:
        """Model inputs: each image placeholder expanded to its number of merged patches."""
        data: dict[str, Any] = {}
        prompts = list(text)
        placeholders = sum(prompt.count(self.image_token) for prompt in prompts)
        if placeholders != len(images or ()):
            raise ValueError(
                f"{placeholders} image placeholder(s) for {len(images or ())} image(s)"
            )
        if images:
            vision = self.image_processor(images=images, return_tensors=return_tensors)
            merge = self.image_processor.merge_size**2
            counts = iter([int(grid.prod()) // merge for grid in vision["image_grid_thw"]])
            prompts = [
                "".join(
                    piece + (self.image_token * next(counts) if i < prompt.count(self.image_token)
                             else "")
                    for i, piece in enumerate(prompt.split(self.image_token))
                )
                for prompt in prompts
            ]  # fmt: skip
            data.update(vision)
        encoded = self.tokenizer(
            prompts, return_tensors=return_tensors, add_special_tokens=add_special_tokens
        )
        data.update(encoded)
        data["mm_token_type_ids"] = (encoded["input_ids"] == self.image_token_id).long()
        return data


def _processor_chat_template(folder: Path) -> str | None:
    """A processor's own chat template (chat_template.jinja or chat_template.json), if any."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text()
    saved = folder / "chat_template.json"
    if saved.is_file():
        template = json.loads(saved.read_text()).get("chat_template")
        return template if isinstance(template, str) else None
    return None


def _eos_ids(model: Any, tokenizer: Any) -> tuple[int, ...]:
    """Token ids that end a completion: the generation config's, the tokenizer's, <|im_end|>."""
    found: list[int] = []
    generation = getattr(model, "generation_config", None)
    configured = getattr(generation, "eos_token_id", None)
    if isinstance(configured, int):
        found.append(configured)
    elif isinstance(configured, list | tuple):
        found += [int(t) for t in configured]
    if isinstance(tokenizer.eos_token_id, int):
        found.append(tokenizer.eos_token_id)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tokenizer.unk_token_id and im_end >= 0:
        found.append(im_end)
    if not found:
        raise ValueError("the model defines no end-of-sequence token (eos_token_id)")
    return tuple(dict.fromkeys(found))


_HASHES: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}
_HASHES_LOCK = threading.Lock()


def weights_sha256(path: Path | str) -> str:
    """sha256 of the weights: the file's own for one *.safetensors, else over `sha256  name` lines.

    Cached per process and in ~/.cache/genservice (keyed by file names, sizes and mtimes).
    """
    folder = Path(path).resolve()
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ModelNotFoundError(f"model directory {folder} holds no *.safetensors weights")
    stamp = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    key = (str(folder), stamp)
    with _HASHES_LOCK:
        if key in _HASHES:
            return _HASHES[key]
    disk_key = hashlib.sha256(repr(key).encode()).hexdigest()
    digest = _disk_cache_get(disk_key)
    if digest is None:
        sums = [(_sha256_file(f), f.name) for f in files]
        if len(sums) == 1:
            digest = sums[0][0]
        else:
            lines = "".join(f"{sha}  {name}\n" for sha, name in sums)
            digest = hashlib.sha256(lines.encode()).hexdigest()
        _disk_cache_put(disk_key, digest)
    with _HASHES_LOCK:
        _HASHES[key] = digest
    return digest


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _cache_file() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "genservice" / "weights_sha256.json"


def _disk_cache_get(key: str) -> str | None:
    try:
        value = json.loads(_cache_file().read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and len(value) == 64 else None


def _disk_cache_put(key: str, digest: str) -> None:
    """Best effort: a read-only home only means hashing again next time."""
    target = _cache_file()
    try:
        try:
            data = json.loads(target.read_text())
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[key] = digest
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        scratch.write_text(json.dumps(data))
        scratch.replace(target)
    except OSError:
        pass
