"""The study's six models as runnable settings, model groups, and display names.

Each :class:`StudyModel` says how to run one of the study's backbones (backend, Hugging Face
repo or API model name, chat-template switches, context length), which part of the grid the
study ran on it (its method set: ablations only on the three smaller open models; its
question count: 200 per dataset for open models, 100 for API models; its full-set runs), and
under which names the study's printed tables list it (``data/paper/*.csv``).

Names a user may give: a registry key (``qwen2.5-14b``), its model id
(``Qwen/Qwen2.5-14B-Instruct``), its display name (``Qwen2.5-14B``), a name the study's
tables use (``Qwen-2.5-14B``), or a group: ``paper`` (the four open models, run one after
another), ``api`` (the two API models), ``study`` (all six).  Any other name or path is
passed through unchanged.

>>> [m.key for m in group("paper")]
['gemma-3-12b', 'llama-3.1-8b', 'qwen2.5-14b', 'qwen3-30b-a3b']
>>> get("Qwen-2.5-14B").model_id
'Qwen/Qwen2.5-14B-Instruct'
>>> get("qwen3-30b-a3b").chat_template_kwargs
{'enable_thinking': False}
>>> "pear_T" in get("gemma-3-12b").methods, "pear_T" in get("qwen3-30b-a3b").methods
(True, False)
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

from pear.backends.registry import SIMULATED
from pear.core.methods import ABLATIONS, METHODS
from pear.paths import PAPER_DIR

__all__ = ["StudyModel", "MODELS", "GROUPS", "get", "lookup", "group", "expand",
           "backend_settings", "check_vllm_model", "printed_numbers", "display_name", "PAPER_DIR",
           "GpuKind", "GPU_KINDS", "Resources", "resources"]

STUDY_METHODS = tuple(m for m in METHODS if m not in ABLATIONS)
"""The main table's eight methods (every model of the study)."""


@dataclass(frozen=True)
class StudyModel:
    """One backbone of the study and how to run it."""

    key: str
    """Short registry name (``pear run --model KEY``)."""
    display_name: str
    """Name used in tables and figures."""
    backend: Literal["vllm", "openai"]
    """``vllm`` for open weights (also servable by ``vllm serve`` + the openai backend),
    ``openai`` for API models (OpenAI-compatible endpoints)."""
    model_id: str
    """Hugging Face repo (open models) or API model name."""
    paper_names: tuple[str, ...]
    """How the study's tables spell the model (``data/paper/*.csv``)."""
    params_b: float | None
    """Parameters in billions (model card; None when unpublished); bf16 weights need about
    2 GB per billion."""
    methods: tuple[str, ...] = STUDY_METHODS
    """The study's method set for this model."""
    n_questions: int = 200  # paper: 200 per dataset (open models), 100 (API models)
    """Questions per dataset in the study's subset runs."""
    full_datasets: tuple[str, ...] = ()
    """Datasets the study also ran on the full set with this model."""
    chat_template_kwargs: Mapping[str, Any] | None = None
    """Passed to the chat template (vLLM); ``{"enable_thinking": False}`` turns Qwen3's
    thinking off, which the protocol needs (a bare JSON answer within 512 tokens)."""
    max_model_len: int | None = None
    """vLLM context length; None for API models."""
    base_url: str | None = None
    """API endpoint (OpenAI-compatible) for API models."""
    api_key_env: str | None = None
    """Environment variable holding the API key (never written anywhere)."""
    notes: str = ""
    tensor_parallel_size: int = 1  # our choice (see the notes of models that differ)
    """GPUs one vLLM engine of this model spans (``pear launch`` asks for this many GPUs
    per task; :func:`resources` raises it when the weights do not fit the GPU kind)."""

    @property
    def is_open(self) -> bool:
        """Open weights (run with vLLM)."""
        return self.backend == "vllm"

    def names(self) -> tuple[str, ...]:
        """Every name :func:`get` resolves to this model."""
        return (self.key, self.model_id, self.display_name, *self.paper_names)


# Context length: the longest prompt of the paper protocol (a clique revision with four
# critiques) stays far below 8k tokens; 16384 leaves room for long MATH-500 problems while
# bounding the KV-cache reservation (our choice).
_CTX = 16384  # our choice
_WITH_ABLATIONS = STUDY_METHODS + ABLATIONS  # paper: ablations on the three smaller open models
_FULL = ("truthfulqa", "math500")  # paper: full-dataset table (Qwen2.5-14B, Llama-3.1-8B)

MODELS: tuple[StudyModel, ...] = (
    StudyModel("gemma-3-12b", "Gemma-3-12B", "vllm", "google/gemma-3-12b-it",
               ("Gemma-3-12B",), 12.2, methods=_WITH_ABLATIONS, max_model_len=_CTX,
               notes="gated on Hugging Face (accept the licence, set HF_TOKEN)"),
    StudyModel("llama-3.1-8b", "Llama-3.1-8B", "vllm", "meta-llama/Llama-3.1-8B-Instruct",
               ("Llama-3.1-8B",), 8.0, methods=_WITH_ABLATIONS, full_datasets=_FULL,
               max_model_len=_CTX,
               notes="gated on Hugging Face (accept the licence, set HF_TOKEN)"),
    StudyModel("qwen2.5-14b", "Qwen2.5-14B", "vllm", "Qwen/Qwen2.5-14B-Instruct",
               ("Qwen-2.5-14B", "Qwen2.5-14B"), 14.7, methods=_WITH_ABLATIONS,
               full_datasets=_FULL, max_model_len=_CTX),
    StudyModel("qwen3-30b-a3b", "Qwen3-30B-A3B", "vllm", "Qwen/Qwen3-30B-A3B",
               ("Qwen-3-30B-A3B", "Qwen3-30B-A3B"), 30.5,
               chat_template_kwargs={"enable_thinking": False}, max_model_len=_CTX,
               notes="mixture of experts, 3B active; ~61 GB of bf16 weights: one 80 GB GPU "
                     "leaves little KV cache, tensor_parallel_size=2 or a 141 GB GPU is "
                     "faster", tensor_parallel_size=2),
    StudyModel("gpt-5.4-nano", "GPT-5.4-nano", "openai", "gpt-5.4-nano", ("GPT-5.4-nano",),
               None, n_questions=100, base_url="https://api.openai.com/v1",
               api_key_env="OPENAI_API_KEY"),
    StudyModel("claude-haiku-4.5", "Claude-Haiku-4.5", "openai", "claude-haiku-4-5",
               ("Claude-Haiku-4.5",), None, n_questions=100,
               base_url="https://api.anthropic.com/v1/", api_key_env="ANTHROPIC_API_KEY",
               notes="through Anthropic's OpenAI-compatible endpoint"),
)
"""The study's six backbones, open models first."""

GROUPS: dict[str, tuple[str, ...]] = {
    "paper": tuple(m.key for m in MODELS if m.is_open),
    "api": tuple(m.key for m in MODELS if not m.is_open),
    "study": tuple(m.key for m in MODELS),
}
"""Names that stand for several models, run one after another."""


def _norm(name: str) -> str:
    return name.strip().lower()


_INDEX: dict[str, StudyModel] = {_norm(n): m for m in MODELS for n in m.names()}


def lookup(name: str) -> StudyModel | None:
    """The registry model ``name`` refers to, or None.  A ``@...`` suffix (a revision, or the
    host that runs recorded before 2026-11 appended to openai model ids) is ignored.

    >>> lookup("Qwen/Qwen2.5-14B-Instruct@127.0.0.1:8000").key
    'qwen2.5-14b'
    >>> lookup("my/other-model") is None
    True
    """
    if not name:
        return None
    return _INDEX.get(_norm(name)) or _INDEX.get(_norm(name.split("@", 1)[0]))


def get(name: str) -> StudyModel:
    """The registry model ``name`` refers to; an unknown name is an error listing them."""
    found = lookup(name)
    if found is None:
        raise ValueError(f"unknown study model {name!r}: choose one of "
                         f"{', '.join(m.key for m in MODELS)} (or a group: "
                         f"{', '.join(GROUPS)}); `pear models` lists them")
    return found


def group(name: str) -> tuple[StudyModel, ...]:
    """The models of group ``name`` (``paper``, ``api``, ``study``)."""
    if name not in GROUPS:
        raise ValueError(f"unknown model group {name!r}: choose one of {', '.join(GROUPS)}")
    return tuple(get(k) for k in GROUPS[name])


def expand(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Model names with groups replaced by their members' model ids and registry names
    (key, display name, ...) by their model id; anything else unchanged.  Duplicates are
    dropped, order kept.

    >>> expand(["api", "my/model", "gpt-5.4-nano"])
    ('gpt-5.4-nano', 'claude-haiku-4-5', 'my/model')
    """
    out: list[str] = []
    for name in names:
        if _norm(name) in GROUPS:
            ids = [m.model_id for m in group(_norm(name))]
        else:
            found = lookup(name)
            ids = [found.model_id if found is not None and "@" not in name else name]
        out += [i for i in ids if i not in out]
    return tuple(out)


def backend_settings(model: str, backend: str) -> dict[str, Any]:
    """Backend settings a registry model needs (empty for other names).

    vLLM gets the chat-template switches and context length; the openai backend gets the
    API endpoint and key variable of an API model (an open model served by ``vllm serve``
    takes its URL from ``--base-url``).  Running an API model on vLLM is an error.

    >>> backend_settings("qwen3-30b-a3b", "vllm")["chat_template_kwargs"]
    {'enable_thinking': False}
    >>> backend_settings("claude-haiku-4.5", "openai")["api_key_env"]
    'ANTHROPIC_API_KEY'
    """
    m = lookup(model)
    if m is None:
        return {}
    if backend == "vllm":
        if not m.is_open:
            raise ValueError(f"{m.display_name} ({m.model_id}) is an API model: run it with "
                             f"--backend openai, not vllm")
        out: dict[str, Any] = {"model": m.model_id}
        if m.chat_template_kwargs:
            out["chat_template_kwargs"] = dict(m.chat_template_kwargs)
        if m.max_model_len:
            out["max_model_len"] = m.max_model_len
        return out
    if backend == "openai" and not m.is_open:
        return {"model": m.model_id, "base_url": m.base_url, "api_key_env": m.api_key_env}
    if backend == "openai":
        return {"model": m.model_id}
    return {}


@dataclass(frozen=True)
class GpuKind:
    """What differs between GPU kinds for a launch: memory (how many GPUs a model's weights
    need) and a rough vLLM throughput (how long a shard takes)."""

    name: str
    memory_gb: int
    """GPU memory (GB)."""
    tokens_per_s: float  # our choice: rough, for 8-14B models with vLLM; measure yours
    """Computed tokens per second of one GPU (uncached prompt + completion), as
    ``pear plan --throughput`` takes it; only sets the time limit of a shard."""


GPU_KINDS: dict[str, GpuKind] = {k.name: k for k in (
    GpuKind("a100-40gb", 40, 2_500.0), GpuKind("a100-80gb", 80, 3_000.0),
    GpuKind("l40s", 48, 2_000.0), GpuKind("h100", 80, 5_000.0),
    GpuKind("h200", 141, 6_000.0))}
"""The one place that names what differs between GPU kinds (docs/cluster.md)."""


@dataclass(frozen=True)
class Resources:
    """What one shard task of a model asks the scheduler for."""

    gpus: int
    cpus: int
    mem_gb: int


def resources(model: str | None, backend: str, gpu_kind: str = "h100") -> Resources:
    """Resources of one task running ``model`` through ``backend``: GPUs only for vLLM
    (the catalog's tensor-parallel size, raised until bf16 weights plus 20% fit; unknown
    models 1); host memory for loading the weights.

    >>> resources("qwen3-30b-a3b", "vllm")
    Resources(gpus=2, cpus=8, mem_gb=96)
    >>> resources("llama-3.1-8b", "vllm", "a100-40gb").gpus
    1
    >>> resources(None, "simulated")
    Resources(gpus=0, cpus=1, mem_gb=4)
    """
    if gpu_kind not in GPU_KINDS:
        raise ValueError(f"unknown GPU kind {gpu_kind!r}: choose one of {', '.join(GPU_KINDS)}")
    if backend != "vllm":
        return Resources(gpus=0, cpus=1, mem_gb=4)  # our choice: HTTP client or simulation
    m = lookup(model or "")
    tp = m.tensor_parallel_size if m is not None else 1
    params = m.params_b if m is not None and m.params_b else None
    if params:
        need = 2.0 * params * 1.2  # bf16 weights + 20%
        while tp * GPU_KINDS[gpu_kind].memory_gb < need:
            tp *= 2
    mem = max(32, int(2.0 * (params or 8.0) * 1.5) + 4)  # our choice: weights pass through RAM
    return Resources(gpus=tp, cpus=4 * tp, mem_gb=-(-mem // 16) * 16)


def check_vllm_model(name: str) -> None:
    """Raise for a name vLLM cannot load that looks like a mistyped registry name: neither
    a study model, nor a Hugging Face id (``org/name``), nor an existing local path.

    >>> check_vllm_model("Qwen/Qwen2.5-0.5B-Instruct")
    >>> check_vllm_model("qwen2.5-15b")
    Traceback (most recent call last):
    ...
    ValueError: unknown model 'qwen2.5-15b': not one of the study's models (`pear models` lists them), a Hugging Face id (org/name) or a local directory
    """
    if lookup(name) is not None or "/" in name or Path(name).expanduser().exists():
        return
    raise ValueError(f"unknown model {name!r}: not one of the study's models (`pear models` "
                     "lists them), a Hugging Face id (org/name) or a local directory")


def printed_numbers(name: str, paper_dir: str | Path = PAPER_DIR) -> dict[str, list[dict]]:
    """The study's printed rows for model ``name``, per table file (``main_results``,
    ``full_dataset``, ``significance``, ``spearman``); tables without the model are left out.

    >>> sorted(printed_numbers("llama-3.1-8b"))
    ['full_dataset', 'main_results', 'significance', 'spearman']
    >>> len(printed_numbers("gemma-3-12b")["main_results"])
    32
    """
    m = get(name)
    spellings = {_norm(n) for n in m.paper_names}
    out: dict[str, list[dict]] = {}
    for path in sorted(Path(paper_dir).glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.DictReader(fh) if _norm(r.get("model") or "") in spellings]
        if rows:
            out[path.stem] = rows
    return out


_GGUF_QUANT = re.compile(r"[.-](?P<q>(?:I?Q\d[A-Za-z0-9_]*)|F16|F32|BF16)$", re.IGNORECASE)
_INSTRUCT = re.compile(r"[-_.](?:instruct|it|chat)$", re.IGNORECASE)


def display_name(model_id: str) -> str:
    """A short human name for a model id, for tables and figures.

    Registry models by their display name; a GGUF file (path or ``<file>@sha256:<hex>``) as
    ``<base model> (<quantisation>)``; a Hugging Face repo id by its last path part;
    simulated backends as "simulated agents"; anything else with hashes stripped.

    >>> display_name("Qwen/Qwen2.5-14B-Instruct")
    'Qwen2.5-14B'
    >>> display_name("gpt-5.4-nano@api.openai.com")
    'GPT-5.4-nano'
    >>> display_name("SmolLM2-135M-Instruct.Q4_1.gguf@sha256:" + "ab" * 32)
    'SmolLM2-135M (Q4_1)'
    >>> display_name("/models/llama-2-7b-chat.Q8_0.gguf")
    'llama-2-7b (Q8_0)'
    >>> display_name("HuggingFaceTB/SmolLM2-360M-Instruct@main")
    'SmolLM2-360M-Instruct'
    >>> display_name("simulated-3f2a9c01bd-s0")
    'simulated agents'
    >>> display_name("my-model@sha256:" + "0" * 64)
    'my-model'
    """
    found = lookup(model_id)
    if found is not None:
        return found.display_name
    name = model_id.strip()
    if name == SIMULATED or name.startswith(f"{SIMULATED}-"):
        return "simulated agents"
    name = re.sub(r"@sha256:[0-9a-fA-F]+$", "", name)
    if name.lower().endswith(".gguf"):
        stem = Path(name).name[: -len(".gguf")]
        quant = _GGUF_QUANT.search(stem)
        if quant:
            base = _INSTRUCT.sub("", stem[: quant.start()])
            return f"{base} ({quant.group('q')})"
        return _INSTRUCT.sub("", stem)
    name = name.split("@", 1)[0]
    return name.rstrip("/").rsplit("/", 1)[-1] or model_id
