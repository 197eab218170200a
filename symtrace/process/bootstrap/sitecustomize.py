"""symtrace's child-process bootstrap (on PYTHONPATH only under `symtrace record/replay`).

It starts the recording or replay session before the program's first line runs, the way
`coverage run` and `opentelemetry-instrument` do, then hands over to any other sitecustomize
module further down sys.path. If symtrace cannot start, the process exits at once with
EXIT_ADAPTER instead of running uninstrumented: an uninstrumented replay would make live calls.
"""

import os
import sys


def _start() -> None:
    if not os.environ.get("SYMTRACE_CHILD"):  # symtrace.process.protocol.ENV_LAUNCH
        return
    try:
        from symtrace.process import child

        child.start()
    except BaseException as exc:  # noqa: BLE001 - anything here must stop the program
        sys.stderr.write(f"symtrace: cannot instrument this process: {type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        os._exit(int(os.environ.get("SYMTRACE_BOOT_FAIL_EXIT", "94")))


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    # never a sitecustomize shipped inside the bundle being recorded or replayed
    bundle = sys.modules.get("symtrace.process.child")
    bundle_dir = getattr(bundle, "bundle_dir", None)
    inside = os.path.realpath(bundle_dir) if bundle_dir else None
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here
                   and not (inside and _within(os.path.realpath(p or "."), inside))]
    module = sys.modules.pop("sitecustomize", None)
    try:
        import importlib

        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if module is not None:
            sys.modules["sitecustomize"] = module


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


_start()
_chain()
