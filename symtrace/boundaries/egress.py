"""Network egress at the socket layer: blocked during strict replay, listed while recording.

The HTTP seams (httpx, httpx2, aiohttp, urllib3/requests) record and serve every exchange
that passes through them. Everything else that opens a connection goes around the boundary:
`urllib.request`, `http.client`, a raw socket, a C extension's Python socket. This module
watches `socket.socket.connect`/`connect_ex`/`sendto` (and `send`/`sendall`, plain and TLS,
while recording) so nothing goes around silently:

* **Replay** (`EgressGuard`): a strict replay serves every boundary call from the bundle and
  so needs no connection at all. Any IPv4/IPv6 connection is refused with `EgressBlocked`
  (SYM-R106, exit 90) naming `host:port`, whether it is an alias of a recorded endpoint
  (`localhost`, `0.0.0.0`, `127.x`, `::1`, `::ffff:127.0.0.1` all mean this machine), and the
  Python stack that opened it. The session keeps the divergence even if the program swallows
  the error. `--allow-host HOST[:PORT]` lets a program's own local services through; a
  selective replay lifts the guard when it goes live.
* **Record** (`EgressRecorder`): a connection opened outside every seam is listed (host,
  port, the library that opened it, count) and written to the manifest as unrecorded egress.
  An LLM-shaped request (a `POST` to a provider create path, see llm_wire) sent outside the
  seams fails the recording: `UnrecordedLLMRequest` (exit 94) names the library, and the
  request never leaves the process.

Below the patched methods, CPython's audit events (`sys.addaudithook`) see what goes around
them: the raw `_socket` module's `connect`/`sendto`, `sendmsg` of any socket (UDP, TCP Fast
Open), DNS lookups (`getaddrinfo`, `gethostbyname`...) and subprocesses (`subprocess.Popen`,
`os.system`, `os.exec*`, `os.posix_spawn`). While recording they are listed as unrecorded
egress with their `kind` (`raw_socket`, `sendmsg`, `dns`, `subprocess`: what a subprocess does
on the network is not seen); in a strict replay a raw `connect`, `sendto` or `sendmsg` is
refused like a patched one. A C extension that calls libc's `connect` itself raises no audit
event: only the kernel stops it (symtrace.process.isolation runs a strict replay in a private
network namespace).

Unix sockets (asyncio's self-pipe, local IPC) are not network egress and pass.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
import sys
import threading
from _socket import AF_INET, AF_INET6
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from symtrace.errors import UnrecordedLLMRequest
from symtrace.model.llm_wire import wire_format
from symtrace.patching import Patch, PatchSet, after_import, cancel_after_import

if TYPE_CHECKING:
    import socket

INET_FAMILIES = (AF_INET, AF_INET6)
# Modules whose frames are plumbing, not "who opened the connection".
_PLUMBING = ("socket", "ssl", "selectors", "asyncio", "symtrace.boundaries", "contextlib",
             "threading", "concurrent", "subprocess")


# -- host aliases ----------------------------------------------------------------------------
def canonical_host(host: str) -> str:
    """One name per machine address: every loopback/unspecified alias is `localhost`;
    IPv4-mapped IPv6 is its IPv4; other hosts are lower-cased."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return "localhost"
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return name
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback or address.is_unspecified:
        return "localhost"
    return str(address)


@dataclass(frozen=True, slots=True)
class HostPort:
    """`HOST[:PORT]` of --allow-host (no port: every port of that host)."""

    host: str
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> HostPort:
        raw = text.strip()
        if raw.startswith("["):  # [v6]:port
            host, _, rest = raw[1:].partition("]")
            port_text = rest.removeprefix(":")
        elif raw.count(":") == 1:
            host, port_text = raw.split(":")
        else:
            host, port_text = raw, ""
        if not host:
            raise ValueError(f"--allow-host {text!r}: no host")
        port = None
        if port_text:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise ValueError(f"--allow-host {text!r}: port must be 1-65535")
            port = int(port_text)
        return cls(canonical_host(host), port)

    def allows(self, host: str, port: int) -> bool:
        return self.host == canonical_host(host) and self.port in (None, port)

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"


def opener_stack(limit: int = 40) -> list[str]:
    """The Python frames that opened a connection, outermost first, plumbing left out."""
    frames: list[str] = []
    frame = sys._getframe(2)
    while frame is not None and len(frames) < limit:
        module = str(frame.f_globals.get("__name__", "?"))
        if not module.startswith(_PLUMBING):
            frames.append(f"{frame.f_code.co_filename}:{frame.f_lineno} in "
                          f"{frame.f_code.co_name} ({module})")
        frame = frame.f_back
    return frames[::-1]


def opener_library(stack: list[str]) -> str:
    """The innermost module on *stack* (the library that made the connection)."""
    if not stack:
        return "?"
    return stack[-1].rsplit("(", 1)[-1].rstrip(")")


CONNECT = "connect"  # a Python socket's connect/connect_ex/sendto (the patched methods)
RAW_SOCKET = "raw_socket"  # the _socket module's connect/sendto, around the patches
SENDMSG = "sendmsg"  # socket.sendmsg to an address (UDP, TCP Fast Open)
DNS = "dns"  # a name lookup (host: the name; what it resolves to is not seen)
SUBPROCESS = "subprocess"  # a program started (host: its executable; its traffic is not seen)


@dataclass(slots=True)
class Egress:
    host: str
    port: int
    library: str
    count: int = 1
    stack: list[str] = field(default_factory=list)
    kind: str = CONNECT

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "library": self.library,
                "count": self.count, "stack": self.stack, "kind": self.kind}


# -- the socket patches (one table, symmetric install) ---------------------------------------
_lock = threading.Lock()


def _address(sock: socket.socket, address: Any) -> tuple[str, int] | None:
    if sock.family not in INET_FAMILIES or not isinstance(address, tuple) or len(address) < 2:
        return None
    try:
        return str(address[0]), int(address[1])
    except (TypeError, ValueError):
        return None


class _SocketWatch:
    """Patches socket methods for one policy; install/uninstall restore exactly. The socket
    layer is imported here, not at the top (the parent reads HostPort without it), and TLS
    sends are patched when `ssl` is first imported (a program without TLS never loads it)."""

    def __init__(self, on_connect: Callable[[str, int], None],
                 on_send: Callable[[bytes], None] | None) -> None:
        import socket

        self.on_connect = on_connect
        self.on_send = on_send
        self._set = PatchSet([
            Patch(socket.socket, "connect", self._connect),
            Patch(socket.socket, "connect_ex", self._connect),
            Patch(socket.socket, "sendto", self._sendto),
            *self._sends(socket.socket),
        ])
        self._tls = PatchSet([])

    def _sends(self, owner: type) -> list[Patch]:
        return [] if self.on_send is None else [Patch(owner, name, self._send)
                                                for name in ("send", "sendall")]

    def install(self) -> None:
        with _lock:
            self._set.install()  # AlreadyPatched (a RuntimeError) when installed twice
        if self.on_send is not None:
            if "ssl" in sys.modules:
                self._patch_tls(sys.modules["ssl"])
            else:
                after_import("ssl", self._patch_tls)

    def _patch_tls(self, ssl: ModuleType) -> None:
        with _lock:
            self._tls = PatchSet(self._sends(ssl.SSLSocket))
            self._tls.install()

    def uninstall(self) -> None:
        cancel_after_import("ssl", self._patch_tls)
        with _lock:
            self._tls.uninstall()
            self._set.uninstall()

    def _connect(self, original: Callable[..., Any]) -> Callable[..., Any]:
        watch = self

        def connect(sock: socket.socket, address: Any, *args: Any) -> Any:
            where = _address(sock, address)
            if where is not None:
                watch.on_connect(*where)
            with _patched_call():
                return original(sock, address, *args)

        return connect

    def _sendto(self, original: Callable[..., Any]) -> Callable[..., Any]:
        watch = self

        def sendto(sock: socket.socket, data: Any, *args: Any) -> Any:
            where = _address(sock, args[-1]) if args else None
            if where is not None:
                watch.on_connect(*where)
            with _patched_call():
                return original(sock, data, *args)

        return sendto

    def _send(self, original: Callable[..., Any]) -> Callable[..., Any]:
        watch = self

        def send(sock: socket.socket, data: Any, *args: Any) -> Any:
            if watch.on_send is not None and sock.family in INET_FAMILIES:
                watch.on_send(bytes(data[:256]) if data[:5] == b"POST " else b"")
            return original(sock, data, *args)

        return send


# -- audit events: what goes around the patched methods -----------------------------------------
_RAW_SENDS = frozenset(("socket.connect", "socket.sendto"))
_DNS_EVENTS = frozenset(("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
                         "socket.gethostbyaddr"))
_SPAWN_EVENTS = frozenset(("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
                           "os.spawn"))
AUDITED = _RAW_SENDS | _DNS_EVENTS | _SPAWN_EVENTS | {"socket.sendmsg"}
# Who starts programs that only describe this machine (`uname -p` for platform.processor(),
# ldconfig for ctypes.util.find_library): not egress.
_NOT_EGRESS = ("symtrace", "platform", "ctypes.util")
_in_patched = threading.local()  # a patched method's own call to the original: seen already
_audit_watchers: list[Callable[[str, tuple[Any, ...]], None]] = []
_audit_hooked = False


@contextlib.contextmanager
def _patched_call() -> Iterator[None]:
    _in_patched.depth = getattr(_in_patched, "depth", 0) + 1
    try:
        yield
    finally:
        _in_patched.depth -= 1


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # every audited operation of the process passes here: the first test must be cheap
    if event not in AUDITED or not _audit_watchers:
        return
    if event in _RAW_SENDS and getattr(_in_patched, "depth", 0):
        return
    if event == "os.posix_spawn" and sys._getframe(1).f_globals.get("__name__") == "subprocess":
        return  # Popen's own spawn (3.13 takes this path more often): listed once, as Popen
    for watcher in tuple(_audit_watchers):
        watcher(event, args)


def _watch_audit(watcher: Callable[[str, tuple[Any, ...]], None]) -> None:
    """Add *watcher* (an audit hook cannot be removed: one is added per process, dormant while
    no watcher is registered)."""
    global _audit_hooked
    with _lock:
        if not _audit_hooked:
            sys.addaudithook(_audit)
            _audit_hooked = True
        _audit_watchers.append(watcher)


def _unwatch_audit(watcher: Callable[[str, tuple[Any, ...]], None]) -> None:
    with _lock, contextlib.suppress(ValueError):
        _audit_watchers.remove(watcher)


def audited_egress(event: str, args: tuple[Any, ...]) -> tuple[str, str, int] | None:
    """(kind, host, port) of an audit event that leaves (or may leave) the process."""
    if event in _RAW_SENDS or event == "socket.sendmsg":
        sock, address = args[0], args[-1]
        if getattr(sock, "family", None) not in INET_FAMILIES:
            return None
        if not isinstance(address, tuple) or len(address) < 2:
            return None
        try:
            host, port = str(address[0]), int(address[1])
        except (TypeError, ValueError):
            return None
        return (SENDMSG if event == "socket.sendmsg" else RAW_SOCKET), host, port
    if event in _DNS_EVENTS:
        name = args[0]
        if isinstance(name, bytes):
            name = name.decode("idna", "replace")
        if not isinstance(name, str) or not name or canonical_host(name) == "localhost":
            return None
        try:
            ipaddress.ip_address(name.strip("[]").split("%", 1)[0])
            return None  # a numeric address: no lookup leaves the machine
        except ValueError:
            pass
        port = args[1] if event == "socket.getaddrinfo" and isinstance(args[1], int) else 0
        return DNS, name, port
    if event in _SPAWN_EVENTS:
        first = args[1] if event == "os.spawn" else args[0]
        if event == "subprocess.Popen" and first is None:
            argv = args[1]
            first = argv if isinstance(argv, (str, bytes)) else next(iter(argv or ()), "?")
        text = os.fsdecode(first) if isinstance(first, (str, bytes, os.PathLike)) else str(first)
        return SUBPROCESS, text.split()[0] if event == "os.system" and text.split() else text, 0
    return None


class EgressGuard:
    """Strict replay: no network connection leaves the process except to allowed hosts."""

    def __init__(self, allow: Iterable[HostPort], recorded: Iterable[tuple[str, int]],
                 on_block: Callable[[dict[str, Any]], BaseException]) -> None:
        self.allow = tuple(allow)
        self._recorded = recorded  # read when a connection is refused (guard_for: lazily)
        self.on_block = on_block
        self.allowed_connections = 0
        self.released = False
        self._watch = _SocketWatch(self._check, None)

    @functools.cached_property
    def recorded(self) -> dict[tuple[str, int], str]:
        return {(canonical_host(h), p): f"{h}:{p}" for h, p in self._recorded}

    def install(self) -> None:
        self._watch.install()
        _watch_audit(self._audited)

    def uninstall(self) -> None:
        _unwatch_audit(self._audited)
        self._watch.uninstall()

    def _audited(self, event: str, args: tuple[Any, ...]) -> None:
        """A raw `_socket` connect/sendto or a sendmsg to an address: refused like a patched
        one (DNS and subprocesses pass: a private network namespace stops what they do)."""
        found = audited_egress(event, args)
        if found is not None and found[0] in (RAW_SOCKET, SENDMSG):
            self._check(found[1], found[2])

    def release(self) -> None:
        """Stop blocking (a selective replay went live)."""
        self.released = True

    def _check(self, host: str, port: int) -> None:
        if self.released:
            return
        if any(rule.allows(host, port) for rule in self.allow):
            self.allowed_connections += 1
            return
        alias_of = self.recorded.get((canonical_host(host), port))
        attempt = {"connect": f"{host}:{port}", "host": host, "port": port,
                   "alias_of": alias_of if alias_of and alias_of != f"{host}:{port}" else None,
                   "recorded_endpoint": alias_of is not None, "stack": opener_stack()}
        raise self.on_block(attempt)


class EgressRecorder:
    """Recording: list connections opened outside every seam; refuse LLM-shaped requests."""

    def __init__(self) -> None:
        self.egress: dict[tuple[Any, ...], Egress] = {}
        self.refused: list[str] = []
        self._watch = _SocketWatch(self._connected, self._sending)
        self._lock = threading.Lock()

    def install(self) -> None:
        self._watch.install()
        _watch_audit(self._audited)

    def uninstall(self) -> None:
        _unwatch_audit(self._audited)
        self._watch.uninstall()

    def to_json(self) -> list[dict[str, Any]]:
        return [self.egress[k].to_json() for k in sorted(self.egress, key=_egress_order)]

    def _connected(self, host: str, port: int, kind: str = CONNECT) -> None:
        if sending_library() is not None:
            return  # a seam's own connection: its exchanges are recorded
        stack = opener_stack()
        library = opener_library(stack)
        if kind != CONNECT and library.startswith(_NOT_EGRESS):
            return  # symtrace's own, the stdlib asking the OS about itself
        key = (host, port) if kind == CONNECT else (kind, host, port)
        with self._lock:
            seen = self.egress.get(key)
            if seen is not None:
                seen.count += 1
            else:
                self.egress[key] = Egress(host, port, library, 1, stack, kind)

    def _audited(self, event: str, args: tuple[Any, ...]) -> None:
        found = audited_egress(event, args)
        if found is not None:
            self._connected(found[1], found[2], found[0])

    def _sending(self, head: bytes) -> None:
        if not head or sending_library() is not None:
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) < 2 or wire_format("POST", parts[1].split("?", 1)[0]) is None:
            return
        stack = opener_stack()
        reason = (
            f"an LLM request ({line.strip()}) was sent by {opener_library(stack)} outside every "
            "symtrace HTTP seam (httpx, httpx2, aiohttp, requests/urllib3): it cannot be "
            "recorded, and a replay would send it live. Send it through one of those "
            "libraries. Opened at:\n  " + "\n  ".join(stack[-6:])
        )
        self.refused.append(reason)
        raise UnrecordedLLMRequest(reason)


def sending_library() -> str | None:
    """The HTTP seam sending in this thread, if any. Imported here, not at the top: the parent
    process reads HostPort and network_manifest and never needs the exchange core (fast start);
    the recorder in the child runs with the seams installed, so the import is a lookup."""
    from symtrace.boundaries.http.exchange import sending_library as sending

    return sending()


def _egress_order(key: tuple[Any, ...]) -> tuple[str, ...]:
    """Connections first (as before the audit kinds), then by kind."""
    return tuple(map(str, key)) if len(key) == 2 else ("~", *map(str, key))


class GuardedSession(Protocol):
    """What the guard needs from a replaying session (symtrace.replay.Replayer)."""

    on_live: list[Callable[[], None]]

    def endpoints(self) -> set[tuple[str, int]]: ...

    def egress_blocked(self, attempt: dict[str, Any]) -> BaseException: ...


def guard_for(session: GuardedSession, allow: Iterable[HostPort] = ()) -> EgressGuard:
    """An egress guard for a replaying session (it stands down when the replay goes live)."""
    def endpoints() -> Iterator[tuple[str, int]]:  # asked only when a connection is refused
        yield from session.endpoints()

    guard = EgressGuard(allow, endpoints(), session.egress_blocked)
    session.on_live.append(guard.release)
    return guard


def network_manifest(events: Iterable[Any], unrecorded: list[dict[str, Any]]) -> dict[str, Any]:
    """What a bundle records about the network: the endpoints its boundary calls talked to
    (`host:port`, through a seam) and the connections opened outside every seam."""
    endpoints = set()
    for event in events:
        meta = getattr(event, "meta", None) or {}
        if meta.get("host"):
            endpoints.add(f"{meta['host']}:{meta.get('port') or 443}")
    return {"endpoints": sorted(endpoints), "unrecorded_egress": unrecorded}
