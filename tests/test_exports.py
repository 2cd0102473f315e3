"""capplan.exports: re-exports imported on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(("package", "name", "heavy"), [("capplan.ingest", "RequestRow", "pandera"),
                                                         ("capplan.profile", "hourly_traffic", "pandera")])
def test_a_name_is_imported_from_its_module_when_first_read(package, name, heavy):
    """A fresh process: importing the package loads none of its heavy modules; reading the name loads its
    module, and the package then holds the same object as the module that defines it."""
    code = (f"import sys, importlib; pkg = importlib.import_module({package!r})\n"
            f"before = {heavy!r} in sys.modules\n"
            f"value = getattr(pkg, {name!r})\n"
            f"print(before, {heavy!r} in sys.modules, pkg.__dict__[{name!r}] is value, {name!r} in dir(pkg),"
            f" {name!r} in pkg.__all__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "True", "True", "True", "True"]


def test_an_unknown_name_is_an_attribute_error_naming_the_package():
    import capplan.ingest

    with pytest.raises(AttributeError, match="module 'capplan.ingest' has no attribute 'load_everything'"):
        capplan.ingest.load_everything  # noqa: B018 - the attribute read is the test


@pytest.mark.parametrize("package", ["capplan.ingest", "capplan.profile"])
def test_every_re_exported_name_is_its_modules_object_whatever_was_imported_first(package):
    """In a fresh process, every submodule imported first (as a command's modules import each other), then every
    re-exported name read: each is the object its module defines, never a submodule of the same name
    (``capplan.ingest.fingerprint`` is both a module and the function it defines)."""
    code = (f"import importlib, pkgutil; pkg = importlib.import_module({package!r})\n"
            f"for info in pkgutil.iter_modules(pkg.__path__): importlib.import_module({package!r} + '.' + info.name)\n"
            "home = {n: m for m, names in pkg._HOMES.items() for n in names}\n"
            "wrong = [n for n in pkg.__all__ if getattr(pkg, n) is not getattr(importlib.import_module(home[n]), n)]\n"
            "print(len(pkg.__all__), wrong)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    count, wrong = done.stdout.split(maxsplit=1)
    assert int(count) > 5
    assert wrong.strip() == "[]"
