"""Issue 38: the route table `stub-llm --help` and docs/stub.md list is what the stub serves:
every path of every route answers (not 404), in its API's shape, and the request counter
counts the three LLM APIs; any other path is a 404."""

from __future__ import annotations

import httpx
import pytest

from symtrace.stub import StubLLM
from symtrace.stub.handler import ROUTES

BODIES = {
    "_completion": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "_provider_format": {"model": "m", "input": "hi", "max_tokens": 16,
                         "messages": [{"role": "user", "content": "hi"}]},
}
SHAPE = {"/v1/chat/completions": "choices", "/chat/completions": "choices",
         "/v1/responses": "output", "/responses": "output", "/v1/messages": "content",
         "/v1/models": "data", "/models": "data", "/_stub/stats": "served",
         "/_stub/reset": "ok"}


@pytest.fixture(scope="module")
def stub():
    with StubLLM(script={"rules": [], "default": {"content": "hello"}}) as server:
        yield server


@pytest.mark.parametrize(("method", "path", "serve"),
                         [(r.method, p, r.serve) for r in ROUTES for p in r.paths])
def test_every_listed_route_is_served(stub, method, path, serve):
    body = BODIES.get(serve)
    reply = httpx.request(method, stub.root_url + path, json=body, trust_env=False)
    assert reply.status_code == 200, reply.text
    assert SHAPE[path] in reply.json()


def test_the_counter_counts_the_three_llm_apis_and_resets(stub):
    httpx.post(stub.root_url + "/_stub/reset", trust_env=False)
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/messages"):
        key = "_completion" if "chat" in path else "_provider_format"
        httpx.post(stub.root_url + path, json=BODIES[key], trust_env=False)
    stats = httpx.get(stub.root_url + "/_stub/stats", trust_env=False).json()
    assert stats["served"] == 3 and set(stats["by_path"]) == {
        "/v1/chat/completions", "/v1/responses", "/v1/messages"}
    httpx.post(stub.root_url + "/_stub/reset", trust_env=False)
    assert httpx.get(stub.root_url + "/_stub/stats", trust_env=False).json()["served"] == 0


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/chat/completions"),
                                              ("POST", "/_stub/stats"), ("GET", "/v2/x")])
def test_anything_else_is_a_404(stub, method, path):
    reply = httpx.request(method, stub.root_url + path, json={}, trust_env=False)
    assert reply.status_code == 404
