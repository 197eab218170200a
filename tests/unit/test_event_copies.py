"""Event copies and reading equal the dataclass definitions."""

from __future__ import annotations

from dataclasses import fields, replace

import orjson
import pytest

from symtrace.bundle.blobs import Joiner
from symtrace.bundle.lazy import LazyEvent
from symtrace.model.events import Edge, EdgeKind, Event, EventType

EVENT = Event(id="agent_action_0001", position=3, type=EventType.AGENT_ACTION, lane="main",
              agent="a", reason="r", parents=(Edge("tool_result_0000", EdgeKind.DATA),),
              request={"body": {"x": 1}}, response={"ok": True},
              meta={"completed": 2}).with_hashes()
OTHER = Event(id="tool_call_0007", position=8, type=EventType.TOOL_CALL, lane="side",
              agent="b", reason="s", parents=(Edge("agent_action_0000", EdgeKind.CONTROL),),
              request=[1], request_hash="h1", response="r", response_hash="h2",
              meta={"m": 1}, content_hash="h3")


@pytest.mark.parametrize("name", [f.name for f in fields(Event)])
def test_evolve_changes_exactly_the_field_it_names(name):
    """Each field, changed alone, is the dataclass's replace (the copy is generated per field)."""
    changed = EVENT.evolve(**{name: getattr(OTHER, name)})
    assert type(changed) is Event
    assert changed == replace(EVENT, **{name: getattr(OTHER, name)})
    assert [getattr(changed, f.name) for f in fields(Event) if f.name != name] == [
        getattr(EVENT, f.name) for f in fields(Event) if f.name != name]


def test_evolve_of_a_lazy_event_reads_and_writes_through_its_properties():
    """A LazyEvent's copy takes the joined request and the request it was given."""
    data = orjson.loads(orjson.dumps(EVENT.to_json()))
    lazy = LazyEvent.of(data, Joiner(lambda ref: None))
    copy = lazy.evolve(position=9)
    assert type(copy) is LazyEvent and copy.position == 9 and copy.request == EVENT.request
    assert lazy.evolve(request={"y": 2}).request == {"y": 2}


def test_a_lazy_event_is_read_as_from_json_reads_it():
    """One way to build an event from its line: a LazyEvent is from_json's, joined later."""
    data = orjson.loads(orjson.dumps(EVENT.to_json()))
    lazy = LazyEvent.of(data, Joiner(lambda ref: None))
    assert type(lazy) is LazyEvent and Event.from_json(data) == EVENT
    assert lazy.to_json() == EVENT.to_json()
    with pytest.raises(KeyError):
        LazyEvent.of({k: v for k, v in data.items() if k != "lane"}, Joiner(lambda ref: None))


def test_with_hashes_is_a_copy_with_the_hashes_and_meta_given():
    """Hashes computed or taken as given, meta replaced, nothing else changed."""
    plain = replace(EVENT, request_hash=None, response_hash=None, content_hash="")
    hashed = plain.with_hashes(EVENT.request_hash, meta={"k": 1},
                               response_hash=EVENT.response_hash)
    assert type(hashed) is Event
    assert hashed == replace(EVENT, meta={"k": 1}) == replace(plain.with_hashes(), meta={"k": 1})
