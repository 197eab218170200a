"""Content-addressed blobs: why bundles grow linearly, not quadratically.

Every LLM request re-sends the whole conversation, so storing requests verbatim makes a bundle
grow with the square of the conversation length. Instead each sizeable string or object in a
request or response is stored once under its digest (one line of the blob pack, blobs.jsonl)
and replaced in the event line by `{"$blob": "sha256:<hex>"}`; the next request re-uses the refs.

Splitting is bottom-up: a long message content becomes a blob, then the (now small) message
object is kept inline or stored as a blob of its own if still large. A list of objects (the
`messages` of a request, its `tools`) becomes a *prefix chain*: one small blob per element,
each naming the chain of the elements before it, and the list is replaced by
`{"$chain": <ref of its last node>}`. A conversation's next request shares every node of the
previous one and adds nodes only for its new messages, so even the references grow linearly.
A user object whose only key is "$blob" or "$chain" is always stored as a blob, so an inline
reference is never ambiguous.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from symtrace.bundle.files import MAX_DEPTH
from symtrace.bundle.seal import canon, sha256_ref
from symtrace.errors import BundleFormatError
from symtrace.model.canonical import JSONValue

BLOB_MIN_BYTES = 128
CHAIN_MIN_ITEMS = 3
REF_KEY = "$blob"
CHAIN_KEY = "$chain"
RESERVED = (REF_KEY, CHAIN_KEY)


def is_ref(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in RESERVED


class Store(Protocol):
    """Where split() puts a blob: *ref*, its bytes, and whether the bytes are *known clean*
    (a chain node framing a memoised element: its content was in a blob already written,
    and so already passed the writer's redaction check; see SplitMemo). A store may also
    have a `many` attribute storing many at once (see store_all)."""

    def __call__(self, ref: str, data: bytes, known_clean: bool = False) -> None: ...


def split(value: JSONValue, store: Store, memo: SplitMemo | None = None) -> JSONValue:
    """Return *value* with sizeable parts replaced by refs; *store(digest, bytes)* saves them.

    *memo* (one per writer) remembers how message-shaped objects were split, by content: a
    conversation re-sends the same messages on every call. The result is the same with or
    without it, byte for byte. A part with nothing to split is returned as the same object
    (not a copy): the caller only serialises the result.
    """
    kind = type(value)
    if kind is dict:
        return _split_object(value, store, memo)[0]
    if kind is list:
        return _split_list(value, store, memo)
    if kind is str:
        return value if len(value) < BLOB_MIN_BYTES else _blob(canon(value), store)
    if kind in _SCALARS:
        return value
    return _split_subclass(value, store, memo)


_dumps, _SORT_KEYS, _sha256 = orjson.dumps, orjson.OPT_SORT_KEYS, hashlib.sha256  # seal.canon's
# Exact types first (a type test per value is what recording pays per field): JSON from
# orjson or the canonicaliser has no subclasses; anything else takes the isinstance path.
_SCALARS = frozenset((int, float, bool, type(None)))


def _split_object(
    value: dict[str, Any], store: Store, memo: SplitMemo | None
) -> tuple[JSONValue, bytes | None]:
    """An object split bottom-up (its parts first, then itself if still 128 bytes or more),
    and the canonical bytes of the result when it stays inline (a chain node holds them: not
    serialised twice); None when it became a ref (most callers only need the value).
    Copied only when a part changed; scalar and short string parts cost one type test."""
    inner = value
    for key, item in value.items():
        kind = type(item)
        if kind is str:
            if len(item) < BLOB_MIN_BYTES:
                continue
            blob = _dumps(item, option=_SORT_KEYS)  # _blob(canon(item)), two calls less
            ref = "sha256:" + _sha256(blob).hexdigest()
            store(ref, blob)
            new: JSONValue = {REF_KEY: ref}
        elif kind is dict:
            new = _split_object(item, store, memo)[0]
        elif kind is list:
            if not item:
                continue
            new = _split_list(item, store, memo)
        elif kind in _SCALARS:
            continue
        else:
            new = _split_subclass(item, store, memo)
        if new is not item:
            if inner is value:
                inner = dict(value)
            inner[key] = new
    data = _dumps(inner, option=_SORT_KEYS)
    if len(data) < BLOB_MIN_BYTES and not (len(value) == 1 and next(iter(value)) in RESERVED):
        return inner, data
    ref = "sha256:" + _sha256(data).hexdigest()  # _blob, one call less
    store(ref, data)
    return {REF_KEY: ref}, None


def _object_bytes(value: dict[str, Any], store: Store, memo: SplitMemo | None) -> bytes:
    """The canonical bytes of an object split: what a chain node holds."""
    result, data = _split_object(value, store, memo)
    return canon(result) if data is None else data


def _split_list(value: list[Any], store: Store, memo: SplitMemo | None) -> JSONValue:
    if len(value) >= CHAIN_MIN_ITEMS:
        kinds = set(map(type, value))  # one C-level pass
        if kinds <= _SCALARS:  # numbers (an embedding): nothing to split, not a call each
            return value
        if memo is not None and kinds == _DICT:
            return _memo_chain(value, store, memo)
        if all(isinstance(item, dict) for item in value):
            return _chain(_split_items(value, store, memo), store)
    if len(value) == 1:  # a response's choices: no comprehension for one item
        only = value[0]
        new = split(only, store, memo)
        return value if new is only else [new]
    items = [split(item, store, memo) for item in value]
    for new, item in zip(items, value, strict=True):
        if new is not item:
            return items
    return value


_DICT = {dict}


def _split_subclass(value: JSONValue, store: Store, memo: SplitMemo | None) -> JSONValue:
    """The plain definition, for values of subclasses of the JSON types."""
    if isinstance(value, list):
        if len(value) >= CHAIN_MIN_ITEMS and all(isinstance(item, dict) for item in value):
            return _chain([_split_item(item, store, memo) for item in value], store)
        return [split(item, store, memo) for item in value]
    if isinstance(value, dict):
        inner = {key: split(item, store, memo) for key, item in value.items()}
        data = canon(inner)
        if len(data) < BLOB_MIN_BYTES and not is_ref(value):
            return inner
        return _blob(data, store)
    if isinstance(value, str) and len(value) >= BLOB_MIN_BYTES:
        return _blob(canon(value), store)
    return value


def _blob(data: bytes, store: Store) -> JSONValue:
    ref = "sha256:" + hashlib.sha256(data).hexdigest()  # seal.sha256_ref, one call less
    store(ref, data)
    return {REF_KEY: ref}


def _split_items(
    items: list[dict[str, Any]], store: Store, memo: SplitMemo | None
) -> list[tuple[bytes, bool]]:
    """The chain elements of a list of objects (of which some are of a dict subclass, or
    without a memo: the plain path), and whether each is known clean."""
    return [_split_item(item, store, memo) for item in items]


def _memo_chain(items: list[dict[str, Any]], store: Store, memo: SplitMemo) -> JSONValue:
    """_chain(_split_items(...)) for a list of plain objects, with a memo.

    The elements are looked up in the memo all at once (keys built and found by C-level
    maps: a re-sent conversation is mostly hits); only misses go through _split_message. All
    elements are split before the first node is stored: the pack's order is _chain's. The
    nodes are looked up in the memo's node table by (previous ref, element bytes) while the
    chain so far was found there: a conversation that only grows re-sends every node of its
    previous call, found by a dict lookup instead of formatted and hashed. Once a node is new
    every later one is too (its previous ref is new); they are put in the table when the
    chain looks like such a conversation (SplitMemo.holds_nodes)."""
    keys = list(map(tuple, map(dict.items, items)))
    try:
        found = list(map(memo.get, keys))
    except TypeError:  # an element holding a list or an object: the others may be found
        found = [_found(memo, key) for key in keys]
    elements: list[tuple[bytes, bool]] = []
    for item, key, known in zip(items, keys, found, strict=True):
        if known is None:
            elements.append(_split_message(item, key, store, memo))
            continue
        for blob_ref, blob in known[1]:  # made by an event not yet known to be in the pack
            store(blob_ref, blob)  # the writer skips refs already in its pack
        elements.append((known[0], True))
    nodes = memo.nodes
    count = len(elements)
    previous = b"null"
    ref = ""
    out: list[tuple[str, bytes, bool]] = []  # the nodes, stored at once (store_all)
    found_nodes = 0  # found in the table, all first (once one is new, so is every later one)
    if nodes:
        for data, clean in elements:
            node = nodes.get((previous, data))
            if node is None:
                break
            ref, node_data, previous = node
            out.append((ref, node_data, clean))
        found_nodes = len(out)
    if found_nodes < count:
        new: list[tuple[bytes, bytes, _Node]] | None = (
            [] if memo.holds_nodes(found_nodes, count) else None)  # to put in the table
        sha256 = hashlib.sha256
        for data, clean in elements[found_nodes:] if found_nodes else elements:
            node_data = b'{"$i":%b,"$p":%b}' % (data, previous)
            digest = sha256(node_data).hexdigest()
            ref = "sha256:" + digest
            out.append((ref, node_data, clean))
            quoted = b'"sha256:%b"' % digest.encode()  # the next node's $p
            if new is not None:
                new.append((previous, data, (ref, node_data, quoted)))
            previous = quoted
        if new:
            memo.put_nodes(new)
    store_all(store, out)
    return {CHAIN_KEY: ref}


def store_all(store: Store, blobs: list[tuple[str, bytes, bool]]) -> None:
    """Store *blobs* (ref, bytes, known clean) in order: in one call when the store offers
    one (`store.many`, as the writer's does: a chain's nodes are most of what an event
    stores), else one call each."""
    many = getattr(store, "many", None)
    if many is not None:
        many(blobs)
        return
    for ref, data, clean in blobs:
        store(ref, data, clean)


def _found(memo: SplitMemo, key: _MemoKey) -> _Split | None:
    try:
        return memo.get(key)
    except TypeError:  # an element holding a list or an object: see _split_item
        return None


def _split_item(item: dict[str, Any], store: Store, memo: SplitMemo | None) -> tuple[bytes, bool]:
    """The canonical bytes of one list element, split (what its chain node holds), and
    whether they are known clean (memoised: written before)."""
    if memo is None or type(item) is not dict:
        return canon(split(item, store, memo)), False
    # Only objects whose every value is a str are put in the memo, and a str never equals a
    # number, None or a bool: a hit is the same content, byte for byte (1 == 1.0 == True
    # would not be). An element holding a list or an object cannot be a key (TypeError).
    try:
        key = tuple(item.items())
        known = memo.get(key)
    except TypeError:
        return _object_bytes(item, store, memo), False
    if known is not None:
        for ref, blob in known[1]:
            store(ref, blob)  # the writer skips refs already in its pack
        return known[0], True
    return _split_message(item, key, store, memo)


def _split_message(
    item: dict[str, Any], key: _MemoKey, store: Store, memo: SplitMemo
) -> tuple[bytes, bool]:
    """The canonical bytes of an object not found by its items (*key*), split, put in the
    memo, and whether they are known clean. An object every value of which is a str takes
    _split_object's steps here directly: each str of 128 characters or more becomes a blob,
    then the object if its bytes are 128 or more, or if its only key is reserved (the blobs
    are kept in the order _split_object stores them). Any other goes to _split_json."""
    if not set(map(type, item.values())) <= _STR:  # one C-level pass
        return _split_json(item, store, memo)
    stored: list[tuple[str, bytes]] = []
    size = 0
    inner = item
    for name, value in item.items():
        if len(value) >= BLOB_MIN_BYTES:
            blob = _dumps(value)  # a str: its canonical bytes need no option
            ref = "sha256:" + _sha256(blob).hexdigest()
            stored.append((ref, blob))
            size += len(blob)
            if inner is item:
                inner = dict(item)
            inner[name] = {REF_KEY: ref}
    data = _dumps(inner, option=_SORT_KEYS)
    if len(data) >= BLOB_MIN_BYTES or (len(item) == 1 and next(iter(item)) in RESERVED):
        ref = "sha256:" + _sha256(data).hexdigest()
        stored.append((ref, data))
        size += len(data)
        data = b'{"%b":"%b"}' % (REF_KEY.encode(), ref.encode())  # canon({REF_KEY: ref})
    memo.put(key, (data, tuple(stored)), len(data) + size)
    for ref, blob in stored:
        store(ref, blob)
    return data, False


_STR = {str}


def _split_json(item: dict[str, Any], store: Store, memo: SplitMemo) -> tuple[bytes, bool]:
    """An object holding lists, objects or scalars (tool calls, content parts, a tool's
    schema: re-sent on every call like the rest), memoised by its JSON text in its own key
    order (the order its blobs are stored in). A tuple, a UUID, a dataclass... is written as
    JSON is but not split as JSON is: an entry is made only for an object equal to the parse
    of its text, and holds that parse (its own objects, which no caller can change); a hit is
    trusted only for an object equal to it (a tuple is not equal to a list, a UUID to a str;
    the subclasses that are equal split as their base types do). So a hit costs one
    serialisation, one lookup and one comparison at C speed: no parse."""
    try:
        text = orjson.dumps(item)
    except TypeError:  # not JSON: the split says where
        return _object_bytes(item, store, memo), False
    known = memo.get(text)
    if known is not None and known[2] == item:
        for ref, blob in known[1]:
            store(ref, blob)  # the writer skips refs already in its pack
        return known[0], True
    stored: list[tuple[str, bytes]] = []

    def keep(ref: str, blob: bytes, known_clean: bool = False) -> None:
        stored.append((ref, blob))

    data = _object_bytes(item, keep, None)
    parsed = orjson.loads(text)
    if parsed == item:
        memo.put(text, (data, tuple(stored), parsed),
                 2 * len(text) + len(data) + sum(len(blob) for _, blob in stored))
    for ref, blob in stored:
        store(ref, blob)
    return data, False


def _chain(items: list[tuple[bytes, bool]], store: Store) -> JSONValue:
    """A prefix chain over the elements' canonical bytes.

    Each node is `canon({"$i": <element>, "$p": <previous ref or null>})`, assembled from the
    element's bytes ("$i" sorts before "$p"; a ref needs no escaping): the element is not
    serialised a second time. A node around a known-clean element is known clean: the rest
    is symtrace's own framing and a ref."""
    previous = b"null"
    ref = ""
    for item, clean in items:
        data = b'{"$i":%b,"$p":%b}' % (item, previous)
        ref = sha256_ref(data)
        store(ref, data, clean)
        previous = b'"%b"' % ref.encode()
    return {CHAIN_KEY: ref}


# An object's items (every value a str), or its JSON text (see _split_json).
_MemoKey = tuple[tuple[str, str], ...] | bytes
# Its split bytes, the blobs it names, and for a JSON text key the parse of that text.
_Split = (tuple[bytes, tuple[tuple[str, bytes], ...]]
          | tuple[bytes, tuple[tuple[str, bytes], ...], JSONValue])
_NodeKey = tuple[bytes, bytes]  # a chain node's previous ref (as JSON) and element bytes
_Node = tuple[str, bytes, bytes]  # its ref, its bytes, its ref as JSON (the next one's $p)


class SplitMemo:
    """How message-shaped objects (every value a string) were split, keyed by content, and
    the chain nodes made from them.

    An element found here was split for an earlier event of the same writer, so its bytes
    were redaction-checked then: the writer clears the memo when an event is refused, so an
    entry made for a refused event is never trusted. Bounded by entries and by bytes held;
    cleared whole beyond either (a new phase of the run: old messages are rarely re-sent).

    An entry names the blobs its element was split into, so a hit stores them again (the
    writer skips refs already in its pack) until `written()` says the event that made it is
    in the pack (`begin()` opens each event): from then on a hit stores nothing.

    A node entry is only arithmetic (a node's bytes and their digest follow from the previous
    ref and the element's bytes): whether the node is clean is said by its element, found
    here or not, and whether it is in the pack by the writer. Bounded like the elements."""

    MAX_ENTRIES = 4096
    MAX_BYTES = 16_000_000

    def __init__(self) -> None:
        self._known: dict[_MemoKey, _Split] = {}
        self._bytes = 0
        self._fresh: list[_MemoKey] = []  # put since begin(), with blobs to confirm
        # The entry for an object's items, or None. The dict's own method (not a wrapper):
        # _memo_chain maps it over a whole list at C level; clear() keeps the same dict.
        self.get: Callable[[Any], _Split | None] = self._known.get
        self.nodes: dict[_NodeKey, _Node] = {}  # read by _memo_chain, put through put_nodes
        self._node_bytes = 0

    def put(self, key: _MemoKey, value: _Split, size: int) -> None:
        """Hold *value* for *key*: *size* bytes of split output, counted twice (the key's
        strings are no longer than the bytes they were split into)."""
        size *= 2
        if size > self.MAX_BYTES // 16:
            return  # a huge message: splitting it again is cheaper than holding it
        if len(self._known) >= self.MAX_ENTRIES or self._bytes + size > self.MAX_BYTES:
            self._known.clear()
            self._bytes = 0
        self._known[key] = value
        self._bytes += size
        if value[1]:
            self._fresh.append(key)

    def holds_nodes(self, found: int, length: int) -> bool:
        """Whether the new nodes of a chain of *length* whose first *found* nodes were in the
        table are worth holding: when it is new, or mostly found (a conversation that only
        grows: its next call re-sends them). A sliding window (only a fixed first message
        found) changes every later node on every call: those would never be found again."""
        return not found or 2 * found >= length

    def put_nodes(self, new: list[tuple[bytes, bytes, _Node]]) -> None:
        """Hold *new* nodes by (previous ref as JSON, element bytes)."""
        nodes = self.nodes
        size = 2 * sum(len(node[1]) for _, _, node in new)  # a node's bytes hold its element
        if size > self.MAX_BYTES // 16:
            return  # huge messages: hashing them again is cheaper than holding them
        if len(nodes) + len(new) > self.MAX_ENTRIES or self._node_bytes + size > self.MAX_BYTES:
            nodes.clear()
            self._node_bytes = 0
        for previous, data, node in new:
            nodes[previous, data] = node
        self._node_bytes += size

    def written(self) -> None:
        """The fresh entries' blobs reached the pack (their event was appended)."""
        known = self._known
        for key in self._fresh:
            entry = known.get(key)
            if entry is not None:
                known[key] = (entry[0], (), *entry[2:])
        self._fresh.clear()

    def begin(self) -> None:
        """A new event: entries left fresh by one that failed (anywhere, before its append)
        are never confirmed, so a hit keeps storing their blobs."""
        self._fresh.clear()

    def clear(self) -> None:
        self._known.clear()
        self._fresh.clear()
        self._bytes = 0
        self.nodes.clear()
        self._node_bytes = 0


class Joiner:
    """Inverse of split(): replaces refs by their content, each ref joined once.

    *load(ref)* returns a blob's parsed content. Joined values are memoized by ref and
    shared between the events that name them (a conversation's messages are one set of
    objects, however many requests re-send them): event content is read-only data. A chain
    reuses its previous node's joined list, so joining a whole bundle is linear in its
    unique content plus one list copy per chain node.

    A bundle may be crafted: a ref that names itself (directly, or through a chain node or
    other blobs) is refused, not followed forever; a joined value nests at most MAX_DEPTH
    (blobs nest inside blobs: each line may be shallow and the joined value not); the chain
    lists built in all are bounded (MAX_CHAIN_ITEMS: every node of a chain gets its own list,
    so one chain of n nodes costs n²/2 slots).
    """

    def __init__(self, load: Callable[[str], JSONValue]) -> None:
        self.load = load
        self.memo: dict[str, Any] = {}
        self.heights: dict[str, int] = {}  # by ref: how deep its joined value nests
        self._open: set[str] = set()  # refs being joined (one seen again is a cycle)
        self._items = 0  # chain list slots built

    def join(self, value: Any) -> JSONValue:
        return self._join(value, 0)[0]

    def _join(self, value: Any, depth: int) -> tuple[JSONValue, int]:
        """*value* joined, and its height (0 for a scalar), at *depth* in the joined whole."""
        kind = type(value)
        if kind is list or kind is dict:
            if depth >= MAX_DEPTH:
                raise BundleFormatError(f"a joined value nests deeper than {MAX_DEPTH}")
            if kind is list:
                joined: list[JSONValue] = []
                height = 0
                for item in value:
                    item_value, item_height = self._join(item, depth + 1)
                    joined.append(item_value)
                    height = max(height, item_height)
                return joined, height + 1
            if len(value) == 1:
                ref = value.get(REF_KEY)
                if type(ref) is str:
                    return self._blob(ref, depth)
                chain = value.get(CHAIN_KEY, _NO_CHAIN)
                if chain is not _NO_CHAIN:
                    items, height = self._chain(chain, depth)
                    return list(items), height
            out: dict[str, JSONValue] = {}
            height = 0
            for key, item in value.items():
                out[key], item_height = self._join(item, depth + 1)
                height = max(height, item_height)
            return out, height + 1
        return value, 0

    def _blob(self, ref: str, depth: int) -> tuple[JSONValue, int]:
        if ref not in self.memo:
            if ref in self._open:
                raise BundleFormatError(f"blob {ref} contains itself (a reference cycle)")
            self._open.add(ref)
            try:
                self.memo[ref], self.heights[ref] = self._join(self.load(ref), depth)
            finally:
                self._open.discard(ref)
        height = self.heights[ref]
        if depth + height > MAX_DEPTH:
            raise BundleFormatError(f"a joined value nests deeper than {MAX_DEPTH}")
        return self.memo[ref], height

    def _chain(self, ref: Any, depth: int) -> tuple[list[JSONValue], int]:
        """The joined list a chain node ends, built forward from the nearest memoized node."""
        pending: list[tuple[str, Any]] = []
        walked: set[str] = set()
        while ref is not None and ref not in self.memo:
            if type(ref) is not str:
                raise BundleFormatError(f"a list node's previous node is not a ref: {ref!r}")
            if ref in walked or ref in self._open:
                raise BundleFormatError(f"list node {ref} follows itself (a reference cycle)")
            walked.add(ref)
            node = self.load(ref)
            if type(node) is not dict or "$i" not in node:
                raise BundleFormatError(f"blob {ref} is not a list node")
            pending.append((ref, node["$i"]))
            ref = node.get("$p")
        items = self.memo[ref] if ref is not None else []
        if type(items) is not list:
            raise BundleFormatError(f"blob {ref} is not a list node")
        height = self.heights.get(ref, 1) if ref is not None else 1
        if depth + height > MAX_DEPTH:
            raise BundleFormatError(f"a joined value nests deeper than {MAX_DEPTH}")
        self._open.update(walked)  # an item naming a node of its own chain is a cycle
        try:
            for node_ref, item in reversed(pending):
                value, item_height = self._join(item, depth + 1)
                items = [*items, value]
                self._items += len(items)
                if self._items > MAX_CHAIN_ITEMS:
                    raise BundleFormatError(
                        f"the bundle's lists join to more than {MAX_CHAIN_ITEMS} items")
                height = max(height, item_height + 1)
                self.memo[node_ref], self.heights[node_ref] = items, height
        finally:
            self._open.difference_update(walked)
        return items, height


MAX_CHAIN_ITEMS = 50_000_000  # list slots (8 bytes each): far above any recorded conversation
_NO_CHAIN = object()


def join(value: Any, load: Callable[[str], JSONValue]) -> JSONValue:
    """Inverse of split() for one value (a Joiner shares work across many)."""
    return Joiner(load).join(value)


def refs_in(value: Any) -> list[str]:
    """The blob refs an event line's request or response names directly."""
    found: list[str] = []
    if isinstance(value, list):
        for item in value:
            found.extend(refs_in(item))
    elif isinstance(value, dict):
        if is_ref(value):
            ref = value.get(REF_KEY) or value.get(CHAIN_KEY)
            if isinstance(ref, str):
                found.append(ref)
        else:
            for item in value.values():
                found.extend(refs_in(item))
    return found
