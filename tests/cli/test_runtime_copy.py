"""The runtime holds only what runs in it (issue 42).

``autolax convert --standalone`` copies ``autolax/runtime/`` as it is beside its output, where
there is no front end, no ``autolax.jit``, no ``trace_check`` recorder and no converter hook.
Code that only the API or the front end calls belongs with them. The check: every top-level
function and class of the runtime is reached from the runtime's own module-level code (what a
converted file imports: the ``ops`` it calls, the tables, the registrations), following the
names each definition uses. The few definitions the layers above call and the runtime does
not are listed here, each with why it stays.
"""

import ast
import pathlib
import re

import pytest

RUNTIME = pathlib.Path(__file__).resolve().parents[2] / "autolax" / "runtime"

# Called from above the runtime only, and kept in it: name -> why.
KEPT = {
    # Readers and writers of the runtime's own state: a fact's home is next to its owner.
    "add_user_package": "writes libraries._USER_PACKAGES, which the runtime reads (autolax.convert_package)",
    "counting": "sets the runtime's context variable of staged checks (autolax.jit's call path)",
    "_Count": "the object `counting` sets, which the runtime's checks write into",
    "pop_failure": "reads the runtime's table of failed checks, which its host callbacks write",
    "converted_nested": "reads the runtime's table of functions defined in converted files",
    "written_by_autolax": "the runtime's own test of converted code, also used by ops.call",
    "plain_lists": "undoes the runtime's AppendedList; the tests read the copy's own (tests/paths.py)",
    "returning_checks": "sets the runtime's context variables of checks (autolax.jit returns them with the outputs)",
    "_Outcome": "the object `returning_checks` sets, which the runtime's checks write into",
    "recording": "sets the runtime's recorder context variable, which its ops write to (autolax.trace_check)",
    "printing_in_order": "sets the runtime's context variable that ops.print reads (autolax.jit's call path)",
    "set_converter": "installs the hook ops.call reads (autolax.api); never set in the copy, where callees stay as written",
    "hide_frames_under": "adds to the runtime's table of its own frames, which it reads to hide them (autolax.api)",
    "python_error_wanted": "reads the mark `traced_message` puts on an error (autolax.jit)",
    # One format in one place: the line map's writer beside its reader (sites.lines_parse).
    "lines_text": "writes the line map that sites.lines_parse reads (autolax convert writes it into its output)",
    "_vlq": "lines_text's digits",
    # Readers of the runtime's tables, by path (the front end imports nothing it converts).
    "is_math_function": "reads MATH_PATHS / MATH_FUNCTIONS, which ops.call and ops.math_call use",
    "is_host_io_path": "host_io by dotted path: the same tables as host_io, which ops.call uses",
    "is_rebuilt": "a question about transforms.rebuild, which ops.call uses",
    "is_jit_object": "reads transforms' _JIT_TYPE, which the runtime uses",
    # JAX internals stay in compat, the one module that touches them.
    "dispatcher": "compat: JAX's C++ dispatch (autolax.jit's fast path)",
    "call_with_fast_path": "compat: JAX's C++ dispatch (autolax.jit's fast path)",
    "drop_failed_effects": "compat: JAX's runtime tokens (autolax.jit after a failed check); tests call it too",
    # Public error classes, documented together and imported from autolax.runtime.errors.
    "SourceChangedError": "a ConversionError, documented with the others",
    "NoSourceWarning": "documented with the other warnings",
    "CallConversionWarning": "documented with the other warnings",
}


def _names(node) -> set:
    """The names ``node``'s code uses: names, attributes, imported names (not its prose)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.alias):
            out |= {n.name.split(".")[-1], n.asname or n.name}
    return out


def _definitions():
    """{name: names its definitions use} for every top-level function and class of the
    runtime, and the names the modules' own statements use. A definition decorated by one
    of the runtime's own objects (``@_lane_where.defjvp``) registers itself: it counts as
    used there."""
    defs, top, decorated = {}, set(), []
    for path in sorted(RUNTIME.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs.setdefault(node.name, set()).update(_names(node) - {node.name})
                decorated += [(node.name, d) for d in node.decorator_list]
            else:
                top |= _names(node)
    for name, decorator in decorated:
        root = decorator.func if isinstance(decorator, ast.Call) else decorator
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in defs:
            top.add(name)
    return defs, top


def _unreached() -> set:
    defs, top = _definitions()
    reached, todo = set(), [name for name in top if name in defs]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(word for word in defs[name] if word in defs)
    return set(defs) - reached


def test_the_runtime_holds_nothing_only_the_layers_above_call():
    extra = _unreached() - set(KEPT)
    assert not extra, (
        f"{sorted(extra)}: never reached from the runtime's own code, so dead in the --standalone copy; "
        "move each to the layer that calls it (autolax/*.py, autolax/frontend/), or list it in KEPT with why"
    )


def test_every_kept_definition_is_still_unreached_from_the_runtime():
    """``KEPT`` does not go stale: a name the runtime now uses (or that is gone) leaves it."""
    stale = set(KEPT) - _unreached()
    assert not stale, f"{sorted(stale)}: reached from the runtime now, or removed; drop them from KEPT"


# Module-level values the runtime assigns and never reads: name -> why each stays.
KEPT_VALUES = {
    "HOST_OUTPUT_PATHS": "libraries' host-output functions by dotted path (autolax convert's), built from its tables",
}


def test_every_value_the_runtime_assigns_is_read_in_it():
    """A module-level name of the runtime that no runtime code reads is dead in the copy
    (``plan.PRIMITIVE`` was the trace report's table; it lives in ``autolax.check`` now)."""
    texts = [path.read_text() for path in sorted(RUNTIME.rglob("*.py"))]
    unread = set()
    for text in texts:
        for node in ast.parse(text).body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if isinstance(target, ast.Name) and not target.id.startswith("__"):
                    uses = sum(len(re.findall(rf"\b{re.escape(target.id)}\b", t)) for t in texts)
                    if uses <= 1:
                        unread.add(target.id)
    assert unread == set(KEPT_VALUES), f"unread: {sorted(unread)}; kept: {sorted(KEPT_VALUES)}"


@pytest.mark.parametrize(
    "module, name",
    [
        ("autolax.runtime.ops.report", "Recorder"),
        ("autolax.runtime.ops.checks", "failure_of"),
        ("autolax.runtime.ops.lists", "holds_appended"),
        ("autolax.runtime.transforms", "wrapped_user_function"),
        ("autolax.runtime.libraries", "convert_package"),
        ("autolax.runtime.libraries", "on_change"),
        ("autolax.runtime.errors", "conversion_error"),
        ("autolax.runtime.plan", "PRIMITIVE"),
        ("autolax.runtime.ops.calls", "_NO_DEFAULT"),
        ("autolax.runtime.ops.checks", "fail"),
        ("autolax.runtime.ops.slices", "_where"),
    ],
)
def test_what_moved_up_is_not_in_the_runtime(module, name):
    import importlib

    assert not hasattr(importlib.import_module(module), name)


def test_the_messages_only_the_api_and_the_cli_give_are_not_in_the_runtime_catalogue():
    from autolax.runtime import errors

    for code in ("standalone-uses-autolax", "transformed-function", "not-callable", "no-user-function"):
        assert code not in errors.MESSAGES


def test_convert_package_still_makes_earlier_conversions_stale(monkeypatch):
    """``autolax.convert_package`` (now the API's) still forgets the conversions made before."""
    import autolax
    from autolax import api
    from autolax.runtime import libraries

    monkeypatch.setattr(libraries, "_USER_PACKAGES", set(libraries._USER_PACKAGES))
    before = api._generation
    autolax.convert_package("autolax_test_runtime_copy_pkg")
    assert api._generation == before + 1
    autolax.convert_package("autolax_test_runtime_copy_pkg")  # already counted: nothing forgotten
    assert api._generation == before + 1
    assert libraries.module_is_library("autolax_test_runtime_copy_pkg.mod", "/site-packages/x.py") is False


def test_an_api_error_still_reads_as_the_catalogue_words_it():
    import autolax

    with pytest.raises(TypeError) as info:
        autolax.jit(3)
    assert str(info.value).startswith("autolax.jit expects a function or another callable")
    assert info.value.code == "not-callable"
    assert info.value.docs == "#callables-and-libraries"
    assert "\nFix: pass the function itself." in str(info.value)


def _no_source_function():
    namespace = {}
    exec("def made_by_exec(x):\n    return x * 2\n", namespace)  # noqa: S102 - no source file: the warning's case
    return namespace["made_by_exec"]


def test_the_no_source_warning_still_points_at_the_line_calling_autolax_jit():
    """``convert`` was split (``_convert_or_warn``): the warning's ``stacklevel`` still names
    the user's line for ``autolax.jit`` and ``autolax.filter_jit``."""
    import autolax

    for api in (autolax.jit, autolax.filter_jit):
        with pytest.warns(autolax.NoSourceWarning) as caught:
            api(_no_source_function())
        assert caught[0].filename == __file__, (api, caught[0].filename)
