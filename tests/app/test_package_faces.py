"""Each package's ``__init__`` is its public API and nothing else, and no module reaches into another's
underscore names: the rooms stay what docs/architecture.md says they are.

Read from the source (no import), so a re-export kept "for older imports" or a late-imported model fails here
with the file and line that brought it back.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "django_paycollect"
PACKAGES = sorted(
    path.parent
    for path in APP.rglob("__init__.py")
    if "migrations" not in path.parts and "locale" not in path.parts
)


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported_names(module: ast.Module) -> set[str]:
    return {
        alias.asname or alias.name
        for node in module.body
        if isinstance(node, ast.ImportFrom) and node.level > 0  # its own rooms, not Django's
        for alias in node.names
    }


@pytest.mark.parametrize("package", PACKAGES, ids=lambda path: module_name(path / "__init__.py"))
def test_a_package_that_names_anything_says_so_in_its_all(package: Path) -> None:
    init = tree(package / "__init__.py")
    names = imported_names(init)
    if not names:
        return  # a package whose rooms are imported by name (api, intake, management)
    exported = next(
        (
            {ast.literal_eval(element) for element in node.value.elts}  # type: ignore[attr-defined]
            for node in init.body
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
        ),
        None,
    )
    assert exported is not None, f"{module_name(package / '__init__.py')} imports names but has no __all__"
    assert names - exported == set(), "imported but not public: an internal or an old import kept alive"
    assert not any(name.startswith("_") for name in exported)
    module = importlib.import_module(module_name(package / "__init__.py"))
    assert all(hasattr(module, name) for name in exported)


def test_the_models_package_is_only_an_index() -> None:
    init = tree(APP / "models" / "__init__.py")
    kinds = {type(node).__name__ for node in init.body}
    assert kinds <= {"Expr", "ImportFrom", "Assign"}, "a model or helper defined in models/__init__.py"
    assert all(node.col_offset == 0 for node in init.body)  # no late imports under an if or a function


def test_no_module_imports_another_modules_underscore_names() -> None:
    """The app's modules, and the tests and benchmarks that use them: an underscore name is its module's."""
    found = []
    for root in (APP, APP.parent / "tests", APP.parent / "benchmarks"):
        for path in sorted(root.rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(tree(path)):
                if not isinstance(node, ast.ImportFrom):
                    continue
                ours = node.level > 0 or (node.module or "").startswith(
                    ("django_paycollect", "tests", "benchmarks")
                )
                for alias in node.names:
                    if ours and alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(APP.parent)}:{node.lineno}: {alias.name}")
    assert found == []


def test_no_test_imports_from_a_conftest() -> None:
    """Shared helpers live in tests/support (or a suite's support module): a conftest is pytest's, and one
    imported as a module runs its fixtures' module twice."""
    found = [
        f"{path.relative_to(APP.parent)}:{node.lineno}"
        for path in sorted((APP.parent / "tests").rglob("*.py"))
        for node in ast.walk(tree(path))
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "conftest"
    ]
    assert found == []
