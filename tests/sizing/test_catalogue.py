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
    with pytest.raises(CatalogueError, match="unknown GPU 'TPU-v5e'.*H100-SXM-80GB"):
        get_gpu("TPU-v5e")   # was B200, which the catalogue now has (issue 18)


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


# --- issue 18: the specs the performance model needs ------------------------------------

DEV_GPUS = ["A100-SXM-80GB", "H100-SXM-80GB", "H200-141GB", "GH200", "L40S-48GB", "B200", "GB200"]
DEV_MODELS = ["llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
              "gpt-oss-20b", "gpt-oss-120b", "qwen3-235b-a22b", "deepseek-r1"]


@pytest.mark.parametrize("key", DEV_GPUS)
def test_every_dev_gpu_has_precisions_and_an_interconnect(key):
    gpu = get_gpu(key)
    assert gpu.dense_tflops["bf16"] == gpu.bf16_dense_tflops
    assert set(gpu.dense_tflops) <= {"fp16", "bf16", "fp8", "fp4"}
    # each narrower format doubles the dense rate where the GPU has it
    for narrow, wide in (("fp8", "bf16"), ("fp4", "fp8")):
        if narrow in gpu.dense_tflops:
            assert gpu.dense_tflops[narrow] == pytest.approx(2 * gpu.dense_tflops[wide], rel=0.02)
    assert gpu.interconnect_bandwidth_gb_per_s > 0 and gpu.interconnect
    assert "datasheet" in gpu.performance_source
    for size_class in SIZE_CLASSES:   # the flat-rate path still works for the new GPUs
        assert gpu.decode_rate(size_class) > 0


def test_datasheet_figures_of_the_new_gpus():
    assert (get_gpu("GH200").memory_gib, get_gpu("GH200").hbm_bandwidth_tb_per_s) == (96, 4.0)
    assert get_gpu("B200").dense_tflops["fp4"] == 9000 and get_gpu("GB200").dense_tflops["fp4"] == 10000
    assert "fp8" not in get_gpu("A100-SXM-80GB").dense_tflops


@pytest.mark.parametrize("key", DEV_MODELS)
def test_every_dev_model_has_the_architecture_fields(key):
    model = get_model(key)
    assert model.hidden_size and model.source.startswith("https://huggingface.co/")
    assert model.num_attention_heads % model.num_kv_heads == 0
    if model.num_experts is not None:   # mixture of experts: fewer active than total
        assert model.experts_per_token < model.num_experts
        assert model.active_parameters < model.parameters
    else:
        assert model.active_parameters is None


def test_mla_and_sliding_window_fields():
    assert get_model("deepseek-r1").kv_latent_dim == 512 + 64
    oss = get_model("gpt-oss-120b")
    assert (oss.sliding_window_tokens, oss.sliding_window_layers, oss.hidden_size) == (128, 18, 2880)


def test_new_fields_are_optional_and_checked(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text(GOOD_MODEL)
    tiny = load_models(path)["tiny"]
    assert tiny.hidden_size is None and tiny.num_experts is None and tiny.sliding_window_layers == 0
    path.write_text(GOOD_MODEL + "num_experts = 0\n")
    with pytest.raises(CatalogueError, match="field 'num_experts' = 0"):
        load_models(path)
