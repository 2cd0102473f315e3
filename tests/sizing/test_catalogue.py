"""Catalogues: the shipped TOML files load, and bad entries get specific errors."""

from __future__ import annotations

import pytest

from capplan.sizing.catalogue import SIZE_CLASSES, CatalogueError, get_gpu, get_model, load_gpus, load_models

REQUIRED_GPUS = {"H100-SXM-80GB": 80, "H200-141GB": 141, "A100-SXM-80GB": 80, "L40S-48GB": 48}
REQUIRED_MODELS = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mistral-7b-v0.3", "mixtral-8x7b", "qwen2.5-72b"]


@pytest.mark.parametrize(("key", "memory_gib"), REQUIRED_GPUS.items())
def test_shipped_gpus(key, memory_gib):
    gpu = get_gpu(key)
    assert gpu.memory_gib == memory_gib
    assert gpu.throughput_source.startswith("ASSUMED")
    for size_class in SIZE_CLASSES:
        assert gpu.decode_rate(size_class) > 0 and gpu.prefill_rate(size_class) > 0


@pytest.mark.parametrize("key", REQUIRED_MODELS)
def test_shipped_models(key):
    model = get_model(key)
    assert model.num_attention_heads % model.num_kv_heads == 0   # grouped-query attention groups evenly
    assert model.source.startswith("https://huggingface.co/")


def test_lookup_is_case_insensitive_and_lists_known_keys():
    assert get_model("LLAMA-3.1-70B").key == "llama-3.1-70b"
    with pytest.raises(CatalogueError, match="unknown GPU 'B200'.*H100-SXM-80GB"):
        get_gpu("B200")


GOOD_MODEL = """
[models.tiny]
name = "tiny"
parameters = 1e9
num_layers = 2
num_attention_heads = 4
num_kv_heads = 2
head_dim = 64
max_context_tokens = 4096
size_class = "small"
"""


@pytest.mark.parametrize(("text", "match"), [
    (GOOD_MODEL + "kv_heads = 3\n", r"\[models.tiny\] field 'kv_heads' = 3: Unexpected keyword"),
    (GOOD_MODEL.replace("num_layers = 2", "num_layers = 0"), r"field 'num_layers' = 0: Input should be greater than 0"),
    (GOOD_MODEL.replace('"small"', '"huge"'), r"field 'size_class' = 'huge'"),
    (GOOD_MODEL.replace("head_dim = 64\n", ""), r"field 'head_dim' is missing"),
    ("[models.tiny\n", "not valid TOML"),
    ("[gpus.x]\nname = 'x'\n", r"expected a \[models.<key>\] table"),
])
def test_bad_entries_name_file_entry_and_field(tmp_path, text, match):
    path = tmp_path / "models.toml"
    path.write_text(text)
    with pytest.raises(CatalogueError, match=match):
        load_models(path)


def test_good_custom_file_and_missing_file(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text(GOOD_MODEL)
    assert load_models(path)["tiny"].head_dim == 64
    with pytest.raises(CatalogueError, match="does not exist"):
        load_gpus(tmp_path / "nope.toml")


def test_edited_file_is_reread(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text(GOOD_MODEL)
    assert load_models(path)["tiny"].num_layers == 2
    path.write_text(GOOD_MODEL.replace("num_layers = 2", "num_layers = 3"))
    import os
    os.utime(path, ns=(1, 10**18))   # a distinct mtime even on coarse-clock filesystems
    assert load_models(path)["tiny"].num_layers == 3
