"""Re-exports imported on first use (PEP 562), for a package whose modules cost different imports.

A package that re-exports its modules' public names would import every module (pandas, pandera,
statsmodels …) when any one of them is used. ``capplan.profile`` and ``capplan.ingest`` name each
re-exported name's module instead and import it when the name is first read: the write path of the
profile does not load the readers' pandera schemas, and the profile summary does not load the
ingest's pandera contract (issue 24: ~0.35 s and ~0.25 s of CPU per ``capplan profile`` process).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, tuple[str, ...]]
                 ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for ``package``, whose names live in ``homes`` (module -> names).

    A name that is also the name of the submodule defining it is imported at once (else it would read as
    the submodule once any module imported that submodule, depending on import order).

    Example: ``__all__, __getattr__, __dir__ = lazy_exports(__name__, {"capplan.ingest.run": ("ingest_paths",)})``.
    """
    home_of = {name: module for module, names in homes.items() for name in names}
    namespace = importlib.import_module(package).__dict__
    for name, module in home_of.items():
        if module == f"{package}.{name}":
            # a name that is also its module's name (``capplan.ingest.fingerprint``): importing the submodule
            # binds the package attribute to the module, and ``__getattr__`` is then never asked; bound now
            namespace[name] = getattr(importlib.import_module(module), name)

    def __getattr__(name: str) -> Any:  # noqa: ANN401, N807 - any re-exported name; the module hook's name
        if name not in home_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home_of[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 - the module hook's name
        return sorted([*namespace, *home_of])

    return sorted(home_of), __getattr__, __dir__
