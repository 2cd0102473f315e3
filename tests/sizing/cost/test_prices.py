"""Tests for capplan.sizing.cost.prices: the bundled price book and the loader's errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from capplan.sizing.catalogue import load_gpus
from capplan.sizing.cost.prices import PriceBookError, load_price_book

PRICE_BOOK = Path(__file__).resolve().parents[3] / "data" / "prices.toml"


@pytest.fixture(scope="module")
def book():
    return load_price_book(PRICE_BOOK)


def test_bundled_book_is_labelled_illustrative_and_dated(book):
    assert "ILLUSTRATIVE" in book.label and "check current pricing" in book.label
    assert book.as_of.year >= 2026
    assert "check current pricing" in book.caveat


# Added to data/gpus.toml for the performance model (issue 18) and not priced yet: price them in
# data/prices.toml, then remove them from this set.
UNPRICED_GPUS = {"GH200", "B200", "GB200"}


def test_bundled_book_covers_the_gpu_catalogue_with_the_same_keys(book):
    assert set(book.gpus) == set(load_gpus()) - UNPRICED_GPUS


@pytest.mark.parametrize("gpu", ["H100-SXM-80GB", "H200-141GB", "A100-SXM-80GB", "L40S-48GB"])
def test_each_gpu_is_sourced_and_commitment_is_a_discount(book, gpu):
    prices = book.gpu(gpu)
    assert len(prices.source) > 40
    on_demand = prices.on_demand_usd_per_gpu_hour
    assert prices.reserved_usd_per_gpu_hour("3y") < prices.reserved_usd_per_gpu_hour("1y") < on_demand
    assert prices.option_prices("1y").spot_effective_usd_per_gpu_hour < on_demand


def test_three_year_rate_amortises_upfront(book):
    # H100: 1.45 USD/h + 9,000 USD / 26,280 h = 1.7925 USD/GPU-h (hand-computed)
    assert book.gpu("H100-SXM-80GB").reserved_usd_per_gpu_hour("3y") == pytest.approx(1.79247, abs=1e-5)


def test_option_prices_without_spot(book):
    assert book.gpu("H100-SXM-80GB").option_prices("1y", use_spot=False).spot_usd_per_gpu_hour is None


def test_unknown_gpu_lists_known_keys(book):
    with pytest.raises(KeyError, match="H100-SXM-80GB"):
        book.gpu("B200")


VALID_GPU = """
[gpus.X]
on_demand_usd_per_gpu_hour = 2.0
reserved."1y" = { hourly_usd_per_gpu_hour = 1.0 }
source = "test"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_minimal_book_loads_and_missing_term_is_named(tmp_path):
    book = load_price_book(write(tmp_path, 'label = "ILLUSTRATIVE"\nas_of = 2026-01-01\n' + VALID_GPU))
    assert book.gpu("X").reserved_usd_per_gpu_hour("1y") == 1.0
    assert book.gpu("X").option_prices("1y").spot_usd_per_gpu_hour is None
    with pytest.raises(ValueError, match="no '3y' reservation"):
        book.gpu("X").reserved_usd_per_gpu_hour("3y")


@pytest.mark.parametrize("text, match", [
    ('label = "x"\nas_of = 2026-01-01\n' + VALID_GPU.replace("2.0", "-2.0"),
     r"gpus\.X\.on_demand_usd_per_gpu_hour"),
    ('label = "x"\nas_of = 2026-01-01\n' + VALID_GPU.replace('"1y"', '"2y"'), r"gpus\.X\.reserved"),
    ('label = "x"\n' + VALID_GPU, "'as_of'"),
    ('label = "x"\nas_of = 2026-01-01\n' + VALID_GPU + "spot_interruptions_per_hour = 4.0\n"
     "spot_work_lost_per_interruption_h = 0.5\n", "never finish"),
    ("label = [", "not valid TOML"),
])
def test_bad_book_names_file_and_key(tmp_path, text, match):
    with pytest.raises(PriceBookError, match=match) as err:
        load_price_book(write(tmp_path, text))
    assert "prices.toml" in str(err.value)


def test_missing_book_is_named(tmp_path):
    with pytest.raises(PriceBookError, match="does not exist"):
        load_price_book(tmp_path / "nope.toml")
