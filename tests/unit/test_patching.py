"""symtrace.patching: the one way seams patch globals and put them back."""

from __future__ import annotations

import socket
import types

import pytest

from symtrace.errors import AlreadyPatched, PatchError, PatchTargetMissing
from symtrace.patching import Patch, PatchSet


class Base:
    def inherited(self) -> str:
        return "base"


class Target(Base):
    def method(self) -> str:
        return "method"

    @classmethod
    def make(cls) -> str:
        return "made"


def tagged(tag: str):
    def wrap(original):
        def replacement(*args, **kwargs):
            return f"{tag}({original(*args, **kwargs)})"

        return replacement

    return wrap


def test_install_patches_in_order_and_uninstall_restores_exactly():
    module = types.ModuleType("m")
    module.f = lambda: "f"
    before_method = vars(Target)["method"]
    patches = PatchSet([Patch(module, "f", tagged("a")), Patch(Target, "method", tagged("b"))])
    patches.install()
    assert patches.installed
    assert module.f() == "a(f)" and Target().method() == "b(method)"
    patches.uninstall()
    assert not patches.installed
    assert module.f() == "f" and vars(Target)["method"] is before_method


def test_a_missing_target_patches_nothing():
    module = types.ModuleType("m")
    module.f = lambda: "f"
    original = module.f
    patches = PatchSet([Patch(module, "f", tagged("a")), Patch(module, "absent", tagged("b"))])
    with pytest.raises(PatchTargetMissing, match="absent"):
        patches.install()
    assert module.f is original and not patches.installed


def test_a_half_failed_install_restores_what_it_applied():
    module = types.ModuleType("m")
    module.f = lambda: "f"
    module.g = lambda: "g"
    original = module.f

    def explode(_original):
        raise RuntimeError("wrapper failed")

    patches = PatchSet([Patch(module, "f", tagged("a")), Patch(module, "g", explode)])
    with pytest.raises(RuntimeError, match="wrapper failed"):
        patches.install()
    assert module.f is original and module.g() == "g" and not patches.installed


def test_an_inherited_attribute_is_shadowed_then_the_shadow_removed():
    patches = PatchSet([Patch(Target, "inherited", tagged("x"))])
    patches.install()
    assert Target().inherited() == "x(base)"
    patches.uninstall()
    assert "inherited" not in vars(Target) and Target().inherited() == "base"


def test_a_classmethod_is_handed_over_as_the_descriptor():
    seen = []

    def wrap(original):
        seen.append(original)
        return original

    patches = PatchSet([Patch(Target, "make", wrap)])
    patches.install()
    patches.uninstall()
    assert isinstance(seen[0], classmethod) and Target.make() == "made"


def test_original_names_the_replaced_value_while_installed():
    module = types.ModuleType("m")
    module.f = lambda: "f"
    original = module.f
    patches = PatchSet([Patch(module, "f", tagged("a"))])
    patches.install()
    assert patches.original(module, "f") is original
    patches.uninstall()
    with pytest.raises(PatchTargetMissing):
        patches.original(module, "f")


def test_installing_twice_is_an_error_and_sets_nest_last_in_first_out():
    before = vars(socket.socket).get("connect")  # the test suite's own network block, if on
    outer = PatchSet([Patch(socket.socket, "connect", tagged("outer"))])
    inner = PatchSet([Patch(socket.socket, "connect", tagged("inner"))])
    outer.install()
    try:
        with pytest.raises(AlreadyPatched):
            outer.install()
        outer_replacement = vars(socket.socket)["connect"]
        inner.install()
        assert inner.original(socket.socket, "connect") is outer_replacement
        inner.uninstall()
        assert vars(socket.socket)["connect"] is outer_replacement
    finally:
        outer.uninstall()
    assert vars(socket.socket).get("connect") is before
    assert issubclass(AlreadyPatched, PatchError)


def test_a_random_neutral_import_leaves_the_program_s_stream_alone(tmp_path, monkeypatch):
    """httpx is imported when the program asks for it, after the session seeded `random`; its
    import draws from `random` (rich.style). Marked neutral, the stream the program sees is the
    one it saw when httpx was imported before the seed; unmarked, the draw shifts it."""
    import random
    import sys

    from symtrace.patching import random_neutral_import

    for name in ("drawing_neutral", "drawing_plain"):
        (tmp_path / f"{name}.py").write_text("import random\nDRAWN = random.getrandbits(24)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    random_neutral_import("drawing_neutral")
    try:
        random.seed(7)
        expected = [random.random() for _ in range(3)]
        random.seed(7)
        first = random.random()
        import drawing_neutral  # noqa: F401
        assert [first, random.random(), random.random()] == expected
        random.seed(7)
        first = random.random()
        import drawing_plain  # noqa: F401
        assert [first, random.random(), random.random()] != expected
    finally:
        random_neutral_import("drawing_neutral", neutral=False)
        for name in ("drawing_neutral", "drawing_plain"):
            sys.modules.pop(name, None)
