"""pytest rewrites the asserts of the tests and conftest files only, never of an installed package.

Why it matters: assertion rewriting parses a module to an AST and compiles that AST, at the module's
first import. pytest marks for rewriting every package of every installed distribution that declares a
pytest plugin entry point, loaded or not (`-p no:NAME` does not unmark it): schemathesis, hypothesis,
anyio, platformdirs. So schemathesis/specs/openapi/schemas.py, first imported inside a test, was parsed
there. CPython 3.11.7's AST builder keeps its recursion-depth counter in state shared by all threads
(fixed in 3.11.8): when a garbage collection in the middle of a parse runs a finaliser and the
interpreter switches to another thread that parses too (Python 3.11 parses source lines to place the
carets of every traceback it formats, e.g. a server thread logging an exception), the counter comes
back wrong and compile() raises "SystemError: AST constructor recursion depth mismatch". A first CI
run on a new machine failed so. pyproject.toml now names the plugins it loads (--disable-plugin-autoload
-p xdist -p hypothesispytest), so nothing marks a third-party package."""

from __future__ import annotations

import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
#: the pytest plugins pyproject.toml names; pytest rewrites each plugin it loads by name
NAMED_PLUGINS = ("xdist",)


def _rewritten() -> list[str]:
    return sorted(name for name, module in list(sys.modules.items())
                  if type(getattr(module, "__loader__", None)).__name__ == "AssertionRewritingHook")


def test_a_third_party_module_imported_inside_a_test_is_not_rewritten():
    import schemathesis.specs.openapi.schemas as imported_late
    from hypothesis import strategies

    for module in (imported_late, strategies):
        assert type(module.__loader__).__name__ != "AssertionRewritingHook", module.__name__


def test_only_the_repository_s_tests_and_the_named_plugins_are_rewritten():
    import schemathesis  # noqa: F401 - imported, as the fuzz tests do, so that a mark on it would show

    strangers = []
    for name in _rewritten():
        module_file = Path(getattr(sys.modules[name], "__file__", None) or "/")
        if name.split(".")[0] in NAMED_PLUGINS:
            continue
        if not module_file.resolve().is_relative_to(REPOSITORY / "tests"):
            strangers.append(f"{name} ({module_file})")
    assert not strangers, f"pytest rewrote {len(strangers)} modules outside the tests: {strangers[:8]}"


def test_the_tests_themselves_are_still_rewritten():
    """The check above must not pass by rewriting nothing: this very module is rewritten."""
    assert __name__ in _rewritten()
