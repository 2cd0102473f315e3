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
