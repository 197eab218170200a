"""Where a marked test's bundle lives, and the digest that tells whether the test changed.

Default: next to the test module, `<module dir>/bundles/<module stem>/<test>` (like
pytest-recording's `cassettes/<module>/<test>.yaml`). With `--symtrace-dir DIR` (or the ini
option `symtrace_dir`; relative to the rootdir) bundles go to
`DIR/<module path relative to the rootdir, without .py>/<test>`, so two modules with the same
name in different packages never share a bundle. Test methods get `<Class>/<test>`;
`bundle="name"` replaces the test part (a relative path, no `..`), or, if absolute, the whole
path.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath
from typing import Any

from symtrace.model.hashing import digest_bytes

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\[\]\-]")


def safe_name(name: str) -> str:
    """A file-system-safe directory name; altered names get a short digest so that
    `test_x[a/b]` and `test_x[a_b]` cannot collide."""
    cleaned = _UNSAFE.sub("_", name).lstrip(".") or "_"
    if cleaned == name:
        return name
    return f"{cleaned}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def module_root(module_path: Path, rootdir: Path, base: Path | None) -> Path:
    if base is None:
        return module_path.parent / "bundles" / module_path.stem
    try:
        relative = module_path.with_suffix("").relative_to(rootdir)
    except ValueError:  # a module outside the rootdir: its name alone
        relative = Path(module_path.stem)
    return base / relative


def test_part(class_name: str | None, test_name: str) -> Path:
    parts = [class_name] if class_name else []
    parts.append(test_name)
    return Path(*(safe_name(p) for p in parts))


def check_explicit(name: Any) -> Path:
    """Validate a marker's `bundle=`: a non-empty path without `..` components."""
    if not isinstance(name, str | Path) or not str(name).strip():
        raise ValueError(f"bundle= must be a non-empty path string, got {name!r}")
    path = Path(name)
    if ".." in PurePosixPath(path.as_posix()).parts:
        raise ValueError(f"bundle={name!r} must not contain '..'")
    return path


def bundle_path(
    module_path: Path,
    rootdir: Path,
    base: Path | None,
    *,
    class_name: str | None,
    test_name: str,
    explicit: Any = None,
) -> Path:
    if explicit is not None:
        chosen = check_explicit(explicit)
        if chosen.is_absolute():
            return chosen
        return module_root(module_path, rootdir, base) / chosen
    return module_root(module_path, rootdir, base) / test_part(class_name, test_name)


def module_digest(module_path: Path) -> str | None:
    """Digest of the test module's bytes: mode `new` re-records a test when it changed.

    The whole module, not just the function: prompts, scripts and helpers a test uses usually
    live at module level. None when the file cannot be read (then `new` replays)."""
    try:
        return digest_bytes(module_path.read_bytes())
    except OSError:
        return None
