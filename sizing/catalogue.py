"""GPU and model catalogues: small frozen records read from TOML.

This is the one module in :mod:`sizing` that reads a file; everything else is
pure. Records are validated with pydantic, so a bad entry raises
:class:`CatalogueError` naming the file, the entry, the field and what was
expected.

>>> get_gpu("H100-SXM-80GB").memory_gib
80.0
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
GPU_CATALOGUE = DATA_DIR / "gpus.toml"
MODEL_CATALOGUE = DATA_DIR / "models.toml"

SIZE_CLASSES: tuple[str, ...] = ("small", "medium", "large")
SizeClass = Literal["small", "medium", "large"]
_Positive = Annotated[float, Field(gt=0)]
_Count = Annotated[int, Field(gt=0)]


class CatalogueError(ValueError):
    """A catalogue file is missing, not TOML, or has an entry of the wrong shape."""


@dataclass(frozen=True)
class GpuSpec:
    """One GPU type: datasheet facts and ASSUMED serving throughputs.

    Attributes
    ----------
    key : str
        Catalogue key, e.g. ``'H100-SXM-80GB'``.
    name : str
        Vendor name.
    memory_gib : float
        Device memory. [GiB]
    hbm_bandwidth_tb_per_s : float
        Memory bandwidth. [TB/s]
    bf16_dense_tflops : float
        Dense BF16 tensor throughput. [TFLOP/s]
    datasheet : str
        Where the facts come from.
    decode_tokens_per_s : dict
        ASSUMED aggregate output tokens/s per GPU, by model size class. [tokens/(s·GPU)]
    prefill_tokens_per_s : dict
        ASSUMED aggregate prompt tokens/s per GPU, by model size class. [tokens/(s·GPU)]
    throughput_source : str
        How the assumed throughputs were chosen.
    dense_tflops : dict
        Dense (no sparsity) tensor throughput by precision key (``'bf16'``,
        ``'fp16'``, ``'fp8'``, ``'fp4'``), only the precisions the GPU has in
        hardware; used by :mod:`sizing.performance`. [TFLOP/s]
    interconnect_bandwidth_gb_per_s : float or None
        GPU-to-GPU bandwidth per GPU, both directions together, as datasheets
        quote it (NVLink; PCIe where there is none). [GB/s]
    interconnect : str
        Name of that link, e.g. ``'NVLink 4'``.
    performance_source : str
        Datasheet behind ``dense_tflops`` and the interconnect figure.
    """

    key: str
    name: str
    memory_gib: _Positive
    hbm_bandwidth_tb_per_s: _Positive
    bf16_dense_tflops: _Positive
    datasheet: str
    decode_tokens_per_s: dict[SizeClass, _Positive]
    prefill_tokens_per_s: dict[SizeClass, _Positive]
    throughput_source: str
    dense_tflops: dict[str, _Positive] = field(default_factory=dict)
    interconnect_bandwidth_gb_per_s: _Positive | None = None
    interconnect: str = ""
    performance_source: str = ""

    # A misspelt key in the TOML is an error, not a silently ignored field.
    __pydantic_config__ = ConfigDict(extra="forbid")

    def decode_rate(self, size_class: str) -> float:
        """ASSUMED output tokens/s per GPU for a model of ``size_class``. [tokens/(s·GPU)]"""
        return self._rate(self.decode_tokens_per_s, "decode_tokens_per_s", size_class)

    def prefill_rate(self, size_class: str) -> float:
        """ASSUMED prompt tokens/s per GPU for a model of ``size_class``. [tokens/(s·GPU)]"""
        return self._rate(self.prefill_tokens_per_s, "prefill_tokens_per_s", size_class)

    def _rate(self, rates: dict[str, float], name: str, size_class: str) -> float:
        if size_class not in rates:
            raise ValueError(f"GPU {self.key} has no {name} for size class {size_class!r}; it has {sorted(rates)}")
        return rates[size_class]


@dataclass(frozen=True)
class ModelSpec:
    """One model architecture, as its config.json describes it.

    Attributes
    ----------
    key : str
        Catalogue key, e.g. ``'llama-3.1-70b'``.
    name : str
        Display name.
    parameters : float
        Total parameters (all experts). [parameters]
    num_layers : int
        Transformer layers. [layers]
    num_attention_heads : int
        Query heads. [heads]
    num_kv_heads : int
        Key/value heads (grouped-query attention). [heads]
    head_dim : int
        Elements per head. [elements]
    max_context_tokens : int
        Longest context per the model card. [tokens]
    size_class : str
        Throughput class in the GPU catalogue: one of :data:`SIZE_CLASSES`.
    source : str
        Model card / config.json the numbers are copied from.
    hidden_size : int or None
        Width of the residual stream (``hidden_size`` in config.json); when not
        given, ``num_attention_heads * head_dim``. [elements]
    active_parameters : float or None
        Parameters used per token: a mixture of experts' shared weights plus
        ``experts_per_token`` experts; when not given, ``parameters`` (dense). [parameters]
    num_experts : int or None
        Routed experts per MoE layer (``num_local_experts`` / ``n_routed_experts``). [experts]
    experts_per_token : int or None
        Routed experts each token uses (``num_experts_per_tok``). [experts]
    kv_latent_dim : int or None
        Elements cached per token per layer under multi-head latent attention
        (DeepSeek: ``kv_lora_rank + qk_rope_head_dim``), instead of
        ``2 * num_kv_heads * head_dim``. [elements]
    sliding_window_tokens : int or None
        Window of the layers that use sliding-window attention. [tokens]
    sliding_window_layers : int
        How many of ``num_layers`` use that window (the rest attend to all). [layers]
    """

    key: str
    name: str
    parameters: _Positive
    num_layers: _Count
    num_attention_heads: _Count
    num_kv_heads: _Count
    head_dim: _Count
    max_context_tokens: _Count
    size_class: SizeClass
    source: str = field(default="")
    hidden_size: _Count | None = None
    active_parameters: _Positive | None = None
    num_experts: _Count | None = None
    experts_per_token: _Count | None = None
    kv_latent_dim: _Count | None = None
    sliding_window_tokens: _Count | None = None
    sliding_window_layers: Annotated[int, Field(ge=0)] = 0

    __pydantic_config__ = ConfigDict(extra="forbid")


def _read(path: Path, table: str) -> dict[str, dict]:
    if not path.is_file():
        raise CatalogueError(f"catalogue file {path} does not exist")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{path}: not valid TOML: {exc}") from None
    entries = data.get(table)
    if not isinstance(entries, dict) or not entries:
        raise CatalogueError(f"{path}: expected a [{table}.<key>] table per entry, found none")
    return entries


def _parse(path: Path, table: str, record: type) -> dict[str, object]:
    stamp = path.stat().st_mtime_ns if path.is_file() else None
    # Callers look a GPU up once per forecast month; re-read only when the file changes.
    return dict(_parse_cached(path.resolve(), stamp, table, record))


@lru_cache(maxsize=32)
def _parse_cached(path: Path, stamp: int | None, table: str, record: type) -> dict[str, object]:
    adapter = TypeAdapter(record)
    out: dict[str, object] = {}
    for key, entry in _read(path, table).items():
        try:
            out[key] = adapter.validate_python({**entry, "key": key}, strict=False)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            found = "is missing" if first["type"] == "missing" else f"= {first.get('input')!r}: {first['msg']}"
            raise CatalogueError(f"{path}: [{table}.{key}] field {where!r} {found}") from None
    return out


def load_gpus(path: str | Path = GPU_CATALOGUE) -> dict[str, GpuSpec]:
    """Every GPU in a catalogue file, by key."""
    return _parse(Path(path), "gpus", GpuSpec)  # type: ignore[return-value]


def load_models(path: str | Path = MODEL_CATALOGUE) -> dict[str, ModelSpec]:
    """Every model in a catalogue file, by key."""
    return _parse(Path(path), "models", ModelSpec)  # type: ignore[return-value]


def _lookup(entries: dict[str, object], key: str, what: str, path: Path) -> object:
    by_folded = {k.casefold(): v for k, v in entries.items()}
    if key.casefold() not in by_folded:
        raise CatalogueError(f"unknown {what} {key!r} in {path}; known: {', '.join(sorted(entries))}")
    return by_folded[key.casefold()]


def get_gpu(key: str, path: str | Path = GPU_CATALOGUE) -> GpuSpec:
    """The GPU ``key`` (case-insensitive); :class:`CatalogueError` lists the known keys."""
    return _lookup(load_gpus(path), key, "GPU", Path(path))  # type: ignore[return-value]


def get_model(key: str, path: str | Path = MODEL_CATALOGUE) -> ModelSpec:
    """The model ``key`` (case-insensitive); :class:`CatalogueError` lists the known keys."""
    return _lookup(load_models(path), key, "model", Path(path))  # type: ignore[return-value]
