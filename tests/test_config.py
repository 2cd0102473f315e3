from pathlib import Path

import pytest

from capplan.config import CapplanConfig, ConfigError, load_config, parse_config


def test_defaults_are_valid():
    cfg = CapplanConfig()
    assert 0 < cfg.sizing.target_utilisation <= 1


def test_bad_value_names_key_value_and_expectation():
    with pytest.raises(ConfigError) as info:
        parse_config({"sizing": {"target_utilisation": 1.7}}, source="x.toml")
    msg = str(info.value)
    assert "sizing.target_utilisation" in msg and "1.7" in msg and "less than or equal to 1" in msg


def test_unknown_key_is_an_error():
    with pytest.raises(ConfigError, match="sizing.gpus_typo"):
        parse_config({"sizing": {"gpus_typo": 3}})


def test_relative_paths_resolve_against_config_folder(tmp_path: Path):
    f = tmp_path / "capplan.toml"
    f.write_text('[database]\npath = "db/x.duckdb"\n')
    assert load_config(f).database.path == tmp_path / "db/x.duckdb"


def test_missing_and_malformed_files(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[database\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


# --- the typed sizing record built from [sizing] ------------------------------------------------------

def test_fleet_spec_copies_every_sizing_setting_by_name():
    from dataclasses import fields

    from capplan.config import SizingConfig
    from capplan.sizing.fleet import FleetSpec

    settings = parse_config({"sizing": {"spares": 2, "zones": 3, "zones_lost": 1, "rollout_surge_fraction": 0.2,
                                        "model": "llama-3.1-70b", "kv_dtype": "fp8"}}).sizing
    spec = settings.fleet_spec()
    assert (spec.spares, spec.zones, spec.zones_lost, spec.rollout_surge_fraction, spec.kv_dtype) == (2, 3, 1, 0.2, "fp8")
    assert spec.gpu.key == "H100-SXM-80GB" and spec.model.key == "llama-3.1-70b"   # looked up in the catalogues
    # every [sizing] field but the catalogue paths is a FleetSpec field: a new setting needs no other edit
    assert set(SizingConfig.model_fields) - {"gpu_catalogue", "model_catalogue"} <= {f.name for f in fields(FleetSpec)}


def test_fleet_spec_overrides_win_and_none_keeps_the_setting():
    settings = parse_config({"sizing": {"spares": 2, "target_utilisation": 0.5}}).sizing
    spec = settings.fleet_spec(spares=None, target_utilisation=0.7, seqs_per_gpu=40.0, gpu="A100-SXM-80GB")
    assert (spec.spares, spec.target_utilisation, spec.seqs_per_gpu, spec.gpu.key) == (2, 0.7, 40.0, "A100-SXM-80GB")
    with pytest.raises(TypeError, match="no FleetSpec field named spare"):
        settings.fleet_spec(spare=3)


def test_every_unit_is_declared_on_its_field():
    from capplan.config import NO_UNIT, ForecastConfig, SizingConfig, field_unit

    assert field_unit(ForecastConfig, "horizon_months") == "months"
    assert field_unit(SizingConfig, "spares") == "count"
    assert field_unit(SizingConfig, "model") == NO_UNIT
