"""The three services: every endpoint, JSON errors, determinism, reset/state, own process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from symtrace_suite.services import (
    Services,
    remote_requests,
    remote_reset,
    remote_state,
    start_services,
)

from tests.suite._support import wait_for_file

HTTP = httpx.Client(timeout=10.0)  # one client: building one per request costs ~0.1 s


def get(svc: Services, name: str, path: str, **params: object) -> httpx.Response:
    return HTTP.get(svc.urls[name] + path, params=params)


def post(svc: Services, name: str, path: str, body: object = None) -> httpx.Response:
    return HTTP.post(svc.urls[name] + path, json=body)


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["status"] == "error" and body["http_status"] == status
    assert body["error"]["code"] == code and body["error"]["message"]


def test_urls_are_loopback_and_distinct(svc: Services) -> None:
    assert sorted(svc.urls) == ["route", "shop", "wiki"]
    assert all(url.startswith("http://127.0.0.1:") for url in svc.urls.values())
    assert len(set(svc.urls.values())) == 3


def test_shop_reads(svc: Services) -> None:
    products = get(svc, "shop", "/products", q="glacier poles").json()
    assert [p["sku"] for p in products["products"]] == ["SKU-107"]
    assert get(svc, "shop", "/products", category="footwear").json()["count"] == 2
    assert get(svc, "shop", "/products/SKU-100").json()["name"] == "Trail Runner Jacket"
    customers = get(svc, "shop", "/customers", q="lena").json()["customers"]
    assert [c["id"] for c in customers] == ["C-103"]
    assert get(svc, "shop", "/customers/C-103").json()["email"] == "lena.sturm@example.test"
    orders = get(svc, "shop", "/orders", customer_id="C-101", status="pending").json()
    assert [o["id"] for o in orders["orders"]] == ["O-1034", "O-1016"]  # newest first
    feb = get(svc, "shop", "/orders", since="2023-02-01", until="2023-02-28").json()["orders"]
    assert feb and all("2023-02-01" <= o["date"] <= "2023-02-28" for o in feb)
    with_boots = get(svc, "shop", "/orders", sku="SKU-109").json()
    assert with_boots["count"] == 5
    order = get(svc, "shop", "/orders/O-1007").json()
    items = sum(i["qty"] * i["price"] for i in order["items"])
    assert order["total"] == pytest.approx(items + order["shipping"])


def test_shop_writes_change_state_and_log(svc: Services) -> None:
    before = svc.state()
    assert post(svc, "shop", "/orders/O-1013/cancel").json()["status"] == "canceled"
    assert post(svc, "shop", "/orders/O-1008/status", {"status": "shipped"}).json()["status"] == (
        "shipped"
    )
    refund = post(svc, "shop", "/orders/O-1029/refund", {"amount": 10.5}).json()
    assert refund["refunded"] == 10.5
    after = svc.state()["shop"]
    assert after["orders"]["O-1013"]["status"] == "canceled"
    assert after["orders"]["O-1008"]["status"] == "shipped"
    assert after["refunds"] == [{"amount": 10.5, "order_id": "O-1029"}]
    changed = {k for k, v in after["orders"].items() if v != before["shop"]["orders"][k]}
    assert changed == {"O-1013", "O-1008", "O-1029"}
    log = svc.requests()["shop"]
    assert [(r["method"], r["path"], r["status"]) for r in log] == [
        ("POST", "/orders/O-1013/cancel", 200),
        ("POST", "/orders/O-1008/status", 200),
        ("POST", "/orders/O-1029/refund", 200),
    ]
    assert log[1]["body"] == {"status": "shipped"}
    svc.reset()
    assert svc.state() == before and svc.requests()["shop"] == []


def test_shop_errors(svc: Services) -> None:
    assert_error(get(svc, "shop", "/orders/O-9999"), 404, "not_found")
    assert_error(get(svc, "shop", "/customers/__CUSTOMER_ID__"), 404, "not_found")
    assert_error(get(svc, "shop", "/products/nope"), 404, "not_found")
    assert_error(get(svc, "shop", "/orders", status="done"), 400, "bad_request")
    assert_error(get(svc, "shop", "/orders", since="Feb 2023"), 400, "bad_request")
    assert_error(post(svc, "shop", "/orders/O-1001/cancel"), 409, "conflict")  # complete
    assert_error(post(svc, "shop", "/orders/O-1008/status", {"status": "lost"}), 400, "bad_request")
    assert_error(post(svc, "shop", "/orders/O-1002/status", {"status": "shipped"}), 409, "conflict")
    assert_error(post(svc, "shop", "/orders/O-1009/refund", {"amount": 1}), 409, "conflict")
    assert_error(post(svc, "shop", "/orders/O-1029/refund", {"amount": 1000}), 400, "bad_request")
    assert_error(post(svc, "shop", "/orders/O-1029/refund", {"amount": "all"}), 400, "bad_request")
    assert_error(post(svc, "shop", "/orders/O-1029/refund", {}), 400, "bad_request")
    assert_error(post(svc, "shop", "/orders"), 405, "method_not_allowed")
    assert_error(get(svc, "shop", "/nowhere"), 404, "not_found")
    bad_json = HTTP.post(svc.urls["shop"] + "/orders/O-1013/cancel", content=b"{not json")
    assert_error(bad_json, 400, "bad_request")
    assert svc.state()["shop"]["orders"]["O-1013"]["status"] == "processing"  # nothing half-done
    assert svc.state()["shop"]["refunds"] == []


def test_wiki(svc: Services) -> None:
    hits = get(svc, "wiki", "/search", q="Ada Vance").json()
    assert hits["results"][0]["slug"] == "ada-vance"
    page = get(svc, "wiki", "/pages/ada-vance").json()
    assert page["facts"]["hometown_slug"] == "harlow-falls"
    town = get(svc, "wiki", "/pages/harlow-falls").json()
    assert town["coordinates"] == {"lat": 46.5123, "lon": 8.1042}
    towns = get(svc, "wiki", "/search", q="town").json()["results"]
    assert len(towns) == 8
    assert_error(get(svc, "wiki", "/pages/ada_vance"), 404, "not_found")
    assert_error(get(svc, "wiki", "/search", q=""), 400, "bad_request")
    assert_error(post(svc, "wiki", "/search"), 405, "method_not_allowed")
    assert svc.state()["wiki"] == {}


def test_route(svc: Services) -> None:
    trip = get(
        svc, "route", "/travel", from_lat=46.3311, from_lon=8.4518, to_lat=46.604, to_lon=8.6112
    ).json()
    assert trip["profile"] == "car" and trip["distance_km"] > 0
    h, m, s = (int(x) for x in trip["duration"].split(":"))
    assert h * 3600 + m * 60 + s == trip["duration_s"]
    walk = get(
        svc,
        "route",
        "/travel",
        from_lat=46.3311,
        from_lon=8.4518,
        to_lat=46.604,
        to_lon=8.6112,
        profile="foot",
    ).json()
    assert walk["distance_km"] == trip["distance_km"] and walk["duration_s"] > trip["duration_s"]
    back = get(
        svc, "route", "/travel", from_lat=46.604, from_lon=8.6112, to_lat=46.3311, to_lon=8.4518
    ).json()
    assert back["distance_km"] == trip["distance_km"]  # symmetric
    park = get(svc, "route", "/nearest", lat=46.5123, lon=8.1042, kind="park").json()
    assert park["name"] == "Highmoor National Park" and park["id"] == 2177076
    assert get(svc, "route", "/pois", kind="museum").json()["count"] == 4
    swapped = get(
        svc, "route", "/travel", from_lat=8.4518, from_lon=46.3311, to_lat=46.604, to_lon=8.6112
    )
    assert_error(swapped, 400, "bad_request")
    assert_error(get(svc, "route", "/nearest", lat=46.5, lon=8.1, kind="parks"), 400, "bad_request")
    assert_error(get(svc, "route", "/nearest", lat="x", lon=8.1, kind="park"), 400, "bad_request")
    assert_error(get(svc, "route", "/travel", from_lat=46.5), 400, "bad_request")
    assert_error(
        get(
            svc,
            "route",
            "/travel",
            from_lat=46.5,
            from_lon=8.1,
            to_lat=46.6,
            to_lon=8.2,
            profile="boat",
        ),
        400,
        "bad_request",
    )


def test_two_instances_answer_identically() -> None:
    paths = [
        ("shop", "/orders"),
        ("wiki", "/pages/brannock"),
        ("route", "/nearest?lat=46.2&lon=7.9&kind=station"),
    ]
    with start_services() as a, start_services() as b:
        assert a.urls != b.urls
        for name, path in paths:
            assert HTTP.get(a.urls[name] + path).content == HTTP.get(b.urls[name] + path).content
        assert a.state() == b.state()


def test_control_endpoints(svc: Services) -> None:
    post(svc, "shop", "/orders/O-1013/cancel")
    assert remote_state(svc.urls) == svc.state()
    assert remote_requests(svc.urls)["shop"][0]["path"] == "/orders/O-1013/cancel"
    remote_reset(svc.urls)
    assert svc.state()["shop"]["orders"]["O-1013"]["status"] == "processing"
    assert_error(get(svc, "shop", "/__nope"), 404, "not_found")
    assert_error(get(svc, "shop", "/__reset"), 404, "not_found")  # reset is POST only


def test_separate_process_ready_file(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "symtrace_suite.services", "--ready-file", str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        urls = wait_for_file(ready, proc)["urls"]
        assert HTTP.post(urls["shop"] + "/orders/O-1013/cancel").status_code == 200
        assert remote_state(urls)["shop"]["orders"]["O-1013"]["status"] == "canceled"
        remote_reset(urls)
        assert remote_state(urls)["shop"]["orders"]["O-1013"]["status"] == "processing"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)  # waits, and closes its pipes
        assert proc.returncode == 0


def test_ready_file_in_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "symtrace_suite.services",
            "--ready-file",
            str(tmp_path / "no" / "ready.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "does not exist" in proc.stderr
