"""The layout of issue 16: one import root, every package installed, no import cycle, no SQL text in Python."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: import name -> folder, as pyproject.toml's [tool.setuptools.package-dir] maps them
ROOTS = {"capplan": "capplan", "capplan.flows": "flows", "capplan.forecasting": "forecasting",
         "capplan.reports": "reports", "capplan.sizing": "sizing", "capplan.sql": "sql"}
SQL_START = re.compile(r"^\s*(select|insert|create|update|delete|drop|alter|with|copy|attach|detach|pragma"
                       r"|set|reset|checkpoint|install|load|begin|commit|rollback|explain|describe|summarize)\s",
                       re.IGNORECASE)
#: what makes a string that starts like SQL read as SQL, not as prose
SQL_BODY = re.compile(r"\b(from|into|table|view|macro|where|values|exclude)\b|^\s*(re)?set\s+\w+\s*(=|to\b)|[?$]\w*\s*$",
                      re.IGNORECASE)


def _modules() -> dict[str, Path]:
    """Every Python module of the distribution: dotted name -> file."""
    found = {}
    for root_name, folder in ROOTS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            name = ".".join((root_name, *parts))
            if root_name == "capplan" and parts and parts[0] in {"flows", "forecasting", "reports", "sizing", "sql"}:
                continue  # not a folder of capplan/ (cannot happen, but never double count)
            found[name.removesuffix(".__init__")] = path
    return found


def test_pyproject_lists_every_package_under_one_root():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {k: v for k, v in ROOTS.items() if k != "capplan"}
    packages = {name for name, path in _modules().items() if path.name == "__init__.py"}
    assert set(config["packages"]) == packages
    assert all(p == "capplan" or p.startswith("capplan.") for p in config["packages"])


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules of ours that ``name`` imports, at any depth of its code (lazy imports count)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        out |= {t for t in targets if t in modules and t != name}
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first search meets in ``graph`` (module -> modules it imports)."""
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return cycles


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, plus the packages Python runs first for a sub-module.

    Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so those count as imported too.
    """
    graph = {}
    for name, path in modules.items():
        edges = _imports(name, path, modules)
        for target in list(edges):
            parts = target.split(".")
            edges |= {p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in modules and p != name
                      and not name.startswith(p + ".")}
        graph[name] = edges
    return graph


def test_no_module_imports_in_a_cycle():
    # a package's __init__ re-exporting its own sub-modules is how a package is built, not a cycle,
    # unless a sub-module imports the package back
    cycles = _cycles(_import_graph(_modules()))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle_through_a_lazy_import(tmp_path):
    """The check above can fail: a function-level import that closes a loop is a cycle."""
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n")
    modules = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    assert _cycles(_import_graph(modules)) == [["a", "b", "a"]]


def _sql_texts(path: Path):
    """(line, text) of each string literal or f-string in ``path`` that reads as SQL."""
    tree = ast.parse(path.read_text(), str(path))
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        else:
            continue
        if SQL_START.match(text) and SQL_BODY.search(text) and not text.rstrip().endswith("."):
            yield node.lineno, text


def test_no_sql_text_in_python():
    """Every query and setting is a file in sql/ run by name (``sql.load``), values bound as parameters."""
    offenders = [f"{path.relative_to(REPO)}:{line}: {text.strip()[:70]!r}"
                 for path in _modules().values() for line, text in _sql_texts(path)]
    assert not offenders, "SQL text in Python (move it to sql/):\n" + "\n".join(offenders)


def test_the_sql_check_finds_sql_text(tmp_path):
    """The check above can fail: it finds a query, an f-string over a table and a setting."""
    probe = tmp_path / "probe.py"
    probe.write_text('a = "select * from requests"\nb = f"delete from {table} where x = 1"\n'
                     'c = "set memory_limit = ?"\nd = "Select a model from the list."\n')
    assert [line for line, _ in _sql_texts(probe)] == [1, 2, 3]


@pytest.mark.parametrize("generic", ["sql", "sizing", "flows", "reports", "forecasting"])
def test_no_generic_top_level_package_is_importable(generic, tmp_path, monkeypatch):
    import importlib.util

    monkeypatch.chdir(tmp_path)  # the repository root is not on sys.path for an installed capplan
    assert importlib.util.find_spec(generic) is None or not str(importlib.util.find_spec(generic).origin or "").startswith(str(REPO))
