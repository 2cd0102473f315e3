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


def test_every_re_exported_name_resolves():
    import capplan.ingest
    import capplan.profile

    for package in (capplan.ingest, capplan.profile):
        assert all(getattr(package, name) is not None for name in package.__all__)
