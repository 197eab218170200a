"""The typed protocol between `symtrace record/replay -- CMD` (the parent) and the instrumented
child it starts.

Two messages, each one JSON file written once, atomically, by one side and read by the other:

- **Launch** (parent → child): what to do. The parent writes it before starting the program
  and passes its path in ONE environment variable, `SYMTRACE_CHILD`; the child's bootstrap
  starts a session only when that variable is set, and clears it at once, so a grandchild
  process never writes into the same bundle.
- **Hand-back** (child → parent): what only the child knows. `Started` as soon as the session
  is up (so the parent can tell "never instrumented" from "died before handing back"), then
  one of `Recorded`, `Replayed`, `Diverged` when the program ends.

Both carry `"protocol": PROTOCOL_VERSION`. Reading anything else — not JSON, another version,
a missing or mistyped field, an unknown status — raises `HandBackError` (exit 94): the parent
never guesses what a child meant. A hand-back file that does not exist is no message at all
(`read_hand_back` returns None): the program never reached the bootstrap, or was killed first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import orjson

from symtrace.bundle.files import atomic_write
from symtrace.errors import HandBackError
from symtrace.model.canonical import JSONValue
from symtrace.session.scheduling_options import DEFAULT_STALL_TIMEOUT

if TYPE_CHECKING:  # imported where a divergence is read: a recording's child never needs it
    from symtrace.model.divergence import DivergenceReport

PROTOCOL_VERSION = 1
ENV_LAUNCH = "SYMTRACE_CHILD"  # the path of the launch file; set only for the child


class Mode(StrEnum):
    RECORD = "record"
    REPLAY = "replay"


class HandBackStatus(StrEnum):
    STARTED = "started"  # the session is up; the program is running
    RECORDED = "recorded"  # the program ended; the recording's bundle is closed
    REPLAYED = "replayed"  # every call matched (or went live after the anchor)
    DIVERGED = "diverged"  # the first divergence, with its report


@dataclass(frozen=True)
class Launch:
    """What the child is to do. Paths are absolute (the program may chdir)."""

    mode: Mode
    bundle: str  # record: the bundle to append to; replay: the bundle to replay
    adapters: tuple[str, ...] | None  # None: every installed framework ("auto")
    hand_back: str = ""  # where the child writes its hand-back (chosen by spawn.py)
    secret_envs: tuple[str, ...] = ()  # environment variables whose values are secrets
    anchor: str | None = None  # replay: the resolved anchor event id
    guidance: str | None = None  # replay: Δ added at the anchor
    placement: str = "user"
    allow_hosts: tuple[str, ...] = ()  # replay: --allow-host HOST[:PORT], already parsed
    child_bundle: str | None = None  # selective replay: the staged child bundle
    hold_tools: bool = False  # selective replay: identical live tool calls get recorded outcomes
    order_timeout: float = DEFAULT_STALL_TIMEOUT  # replay: ReplayOptions.scheduling.stall_timeout
    infer_from_state: bool = True  # replay: ReplayOptions.scheduling.infer_from_state
    # every registered adapter as (name, entry point, framework module), found by the parent:
    # the child arms `adapters` from these without scanning or importing (empty: it resolves)
    declared: tuple[tuple[str, str, str], ...] = ()

    def to_bytes(self) -> bytes:
        body: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("adapters", "secret_envs", "allow_hosts"):
            if body[name] is not None:
                body[name] = list(body[name])
        body["declared"] = [list(d) for d in self.declared]
        return _dump({"protocol": PROTOCOL_VERSION, **body})

    @classmethod
    def from_bytes(cls, data: bytes) -> Launch:
        body = _load(data, "launch")
        reader = _Fields(body, "launch")
        mode = reader.get("mode", str)
        try:
            typed_mode = Mode(mode)
        except ValueError:
            raise HandBackError(f"launch: unknown mode {mode!r}") from None
        adapters = reader.get("adapters", list, optional=True)
        launch = cls(
            mode=typed_mode,
            bundle=reader.get("bundle", str),
            hand_back=reader.get("hand_back", str),
            adapters=None if adapters is None else _strings(adapters, "launch.adapters"),
            secret_envs=_strings(reader.get("secret_envs", list), "launch.secret_envs"),
            anchor=reader.get("anchor", str, optional=True),
            guidance=reader.get("guidance", str, optional=True),
            placement=reader.get("placement", str),
            allow_hosts=_strings(reader.get("allow_hosts", list), "launch.allow_hosts"),
            child_bundle=reader.get("child_bundle", str, optional=True),
            hold_tools=bool(reader.get("hold_tools", bool, optional=True)),
            order_timeout=_seconds(reader.get("order_timeout", float, optional=True)),
            infer_from_state=reader.get("infer_from_state", bool, optional=True) is not False,
            declared=_declarations(reader.get("declared", list, optional=True) or []),
        )
        reader.done()
        if not launch.hand_back:
            raise HandBackError("launch: field 'hand_back' is empty")
        return launch

    def write(self, path: Path) -> None:
        atomic_write(path, self.to_bytes(), durable=False)

    def environ(self, path: Path) -> dict[str, str]:
        """The one variable that tells the bootstrap to start a session from *path*."""
        return {ENV_LAUNCH: str(path)}


def _seconds(value: float | None) -> float:
    if value is None:
        return DEFAULT_STALL_TIMEOUT
    if not value > 0:
        raise HandBackError(f"launch.order_timeout: {value!r} is not a number of seconds > 0")
    return value


def _declarations(items: list[Any]) -> tuple[tuple[str, str, str], ...]:
    out = []
    for item in items:
        if not (isinstance(item, list) and len(item) == 3
                and all(isinstance(part, str) for part in item)):
            raise HandBackError("launch.declared: each entry must be [name, entry, module]")
        out.append((item[0], item[1], item[2]))
    return tuple(out)


def take_launch(environ: os._Environ[str] | dict[str, str] | None = None) -> Launch | None:
    """The launch this process was started with (None: not started by symtrace), removed from
    the environment so that processes the program starts are not instrumented."""
    environ = os.environ if environ is None else environ
    path = environ.pop(ENV_LAUNCH, "")
    if not path:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise HandBackError(f"cannot read the launch file {path}: {exc}") from exc
    return Launch.from_bytes(data)


# -- hand-backs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Started:
    status: ClassVar[HandBackStatus] = HandBackStatus.STARTED


@dataclass(frozen=True)
class Recorded:
    status: ClassVar[HandBackStatus] = HandBackStatus.RECORDED
    adapters_used: tuple[str, ...]
    has_final_value: bool
    final_value: JSONValue
    refused: str | None = None  # an unsupported framework was refused (maybe caught)
    redaction_refused: str | None = None  # a secret was about to reach the bundle
    unrecorded_egress: tuple[dict[str, Any], ...] = ()  # connections outside every seam
    egress_refused: str | None = None  # an LLM request sent around every seam
    writer_failed: str | None = None  # the child's last write failed: the bundle lacks events

    @property
    def refusal(self) -> str | None:
        """Why the recording must not be kept, if it must not."""
        return self.refused or self.egress_refused or self.redaction_refused


@dataclass(frozen=True)
class Replayed:
    status: ClassVar[HandBackStatus] = HandBackStatus.REPLAYED
    has_final_value: bool
    final_value: JSONValue
    served: int
    live: int
    allowed_connections: int
    lineage: dict[str, Any] | None = None  # selective replay that went live at the anchor
    refused: str | None = None  # an adapter refused a construct (maybe caught): exit 94


@dataclass(frozen=True)
class Diverged:
    status: ClassVar[HandBackStatus] = HandBackStatus.DIVERGED
    has_final_value: bool
    final_value: JSONValue
    served: int
    live: int
    allowed_connections: int
    kind: str  # the ReplayDivergence subclass raised
    report: DivergenceReport = field(compare=False)
    refused: str | None = None  # an adapter refused a construct (maybe caught): exit 94

    @property
    def rendered(self) -> str:
        return self.report.render()


HandBack = Started | Recorded | Replayed | Diverged
_BY_STATUS: dict[HandBackStatus, type[Any]] = {
    cls.status: cls for cls in (Started, Recorded, Replayed, Diverged)
}


def hand_back_json(message: HandBack) -> dict[str, Any]:
    """The message's fields as JSON (the parent's replay report starts from this)."""
    body: dict[str, Any] = {"status": message.status.value}
    for f in fields(message):
        value = getattr(message, f.name)
        if value is None and f.name in _OMITTED_WHEN_NULL:
            continue
        if f.name == "report" and value is not None:  # a DivergenceReport
            body[f.name] = value.to_json()
            body["rendered"] = value.render()
        elif isinstance(value, tuple):
            body[f.name] = list(value)
        else:
            body[f.name] = value
    return body


def write_hand_back(path: Path, message: HandBack) -> None:
    atomic_write(path, _dump({"protocol": PROTOCOL_VERSION, **hand_back_json(message)}))


def read_hand_back(path: Path) -> HandBack | None:
    """The child's last message, or None when it wrote none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HandBackError(f"cannot read the child's hand-back {path}: {exc}") from exc
    return parse_hand_back(data)


def parse_hand_back(data: bytes) -> HandBack:
    body = _load(data, "hand-back")
    status = body.pop("status", None)
    try:
        cls = _BY_STATUS[HandBackStatus(status)]
    except (ValueError, KeyError):
        raise HandBackError(f"hand-back: unknown status {status!r}") from None
    body.pop("rendered", None)  # derived from the report; not read back
    reader = _Fields(body, f"hand-back {status}")
    values: dict[str, Any] = {}
    for f in fields(cls):  # the writer writes every field: none may be left out
        kind, nullable, convert = _FIELD_TYPES[f.name]
        if f.name in _OMITTED_WHEN_NULL and f.name not in body:
            continue
        value = reader.get(f.name, kind, optional=nullable)
        values[f.name] = convert(value, f"hand-back.{f.name}") if convert else value
    reader.done()
    return cls(**values)


# -- parsing helpers -------------------------------------------------------------------------
_T = TypeVar("_T")


def _dump(body: Mapping[str, Any]) -> bytes:
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise HandBackError(f"{what}: not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise HandBackError(f"{what}: expected a JSON object, got {type(body).__name__}")
    version = body.pop("protocol", None)
    if version != PROTOCOL_VERSION:
        raise HandBackError(
            f"{what}: protocol version {version!r}, this symtrace speaks {PROTOCOL_VERSION} (the "
            "program ran another symtrace than the one that started it?)"
        )
    return body


class _Fields:
    """Typed access to a message's fields; `done()` refuses fields nobody asked for."""

    def __init__(self, body: dict[str, Any], what: str) -> None:
        self._body, self._what, self._seen = body, what, set[str]()

    def get(self, name: str, kind: type[_T], *, optional: bool = False) -> Any:
        self._seen.add(name)
        if name not in self._body:
            raise HandBackError(f"{self._what}: field {name!r} is missing")
        value = self._body[name]
        if value is None:
            if optional:
                return None
            raise HandBackError(f"{self._what}: field {name!r} is null")
        if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
            raise HandBackError(
                f"{self._what}: field {name!r} should be {kind.__name__}, got "
                f"{type(value).__name__}"
            )
        return value

    def done(self) -> None:
        unknown = sorted(set(self._body) - self._seen)
        if unknown:
            raise HandBackError(f"{self._what}: unknown fields {unknown}")


def _strings(values: list[Any], what: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in values):
        raise HandBackError(f"{what}: expected a list of strings")
    return tuple(values)


def _egress(values: list[Any], what: str) -> tuple[dict[str, Any], ...]:
    if not all(isinstance(v, dict) for v in values):
        raise HandBackError(f"{what}: expected a list of objects")
    return tuple(values)


def _report(value: dict[str, Any], what: str) -> DivergenceReport:
    from symtrace.model.divergence import DivergenceReport

    try:
        return DivergenceReport.from_json(value)
    except (KeyError, TypeError, ValueError) as exc:
        raise HandBackError(f"{what}: not a divergence report ({exc!r})") from None


# written only when set (the replay report has had no "lineage" key for a strict replay)
_OMITTED_WHEN_NULL = frozenset({"lineage", "writer_failed", "refused"})
# field name -> (JSON type, may be null, conversion): one table for every hand-back
_FIELD_TYPES: dict[str, tuple[type[Any], bool, Callable[[Any, str], Any] | None]] = {
    "adapters_used": (list, False, _strings),
    "has_final_value": (bool, False, None),
    "final_value": (object, True, None),
    "refused": (str, True, None),
    "redaction_refused": (str, True, None),
    "unrecorded_egress": (list, False, _egress),
    "egress_refused": (str, True, None),
    "writer_failed": (str, True, None),
    "served": (int, False, None),
    "live": (int, False, None),
    "allowed_connections": (int, False, None),
    "lineage": (dict, True, None),
    "kind": (str, False, None),
    "report": (dict, False, _report),
}
