"""Shop admin: products, customers, orders; cancel, set status and refund mutate the state.

Modelled on WebArena's shopping-admin site. Orders are listed newest first (then by id), so
"the most recent order" is the first row. Transitions are checked like a real admin would:
only pending/processing orders can be cancelled, refunds never exceed what is left to refund.
"""

from __future__ import annotations

from typing import Any

from symtrace_suite.services.base import (
    JSON,
    Request,
    Service,
    ServiceError,
    bad_request,
    not_found,
)

CANCELLABLE = frozenset({"pending", "processing"})
REFUNDABLE = frozenset({"shipped", "complete", "canceled"})


def _matches(query: str, *fields: str) -> bool:
    words = query.lower().split()
    text = " ".join(fields).lower()
    return bool(words) and all(w in text for w in words)


def _summary(order: JSON) -> JSON:
    keys = ("id", "customer_id", "date", "status", "shipping", "total", "refunded")
    return {k: order.get(k, 0.0) for k in keys}


class Shop(Service):
    name = "shop"
    data_file = "shop.json"

    def state(self) -> JSON:
        orders = {
            o["id"]: {"status": o["status"], "refunded": o.get("refunded", 0.0)}
            for o in self.data["orders"]
        }
        return {"orders": orders, "refunds": list(self.data.get("refunds", []))}

    def route(self, request: Request) -> JSON:
        parts, method = request.parts, request.method
        if parts == ("products",) and method == "GET":
            return self._products(request)
        if parts == ("customers",) and method == "GET":
            return self._customers(request)
        if parts == ("orders",) and method == "GET":
            return self._orders(request)
        if len(parts) == 2 and method == "GET":
            if parts[0] == "products":
                return self._one("products", "sku", parts[1], "product")
            if parts[0] == "customers":
                return self._one("customers", "id", parts[1], "customer")
            if parts[0] == "orders":
                return self._order(parts[1])
        if len(parts) == 3 and parts[0] == "orders" and method == "POST":
            action = {"cancel": self._cancel, "status": self._set_status, "refund": self._refund}
            if parts[2] in action:
                return action[parts[2]](self._order_ref(parts[1]), request)
        if parts[:1] in (("products",), ("customers",), ("orders",)):
            raise ServiceError(405, "method_not_allowed", f"{method} /{'/'.join(parts)}")
        raise not_found("/" + "/".join(parts))

    # -- reads ---------------------------------------------------------------------------

    def _products(self, request: Request) -> JSON:
        q = request.arg("q") or ""
        category = request.arg("category") or ""
        rows = [
            p
            for p in self.data["products"]
            if (not q or _matches(q, p["name"], p["sku"]))
            and (not category or p["category"] == category)
        ]
        return {"products": rows, "count": len(rows)}

    def _customers(self, request: Request) -> JSON:
        q = request.arg("q") or ""
        rows = [
            c
            for c in self.data["customers"]
            if not q or _matches(q, c["name"], c["email"], c["id"])
        ]
        return {"customers": rows, "count": len(rows)}

    def _orders(self, request: Request) -> JSON:
        filters = {
            k: request.arg(k) or "" for k in ("customer_id", "status", "since", "until", "sku")
        }
        if filters["status"] and filters["status"] not in self.data["order_statuses"]:
            raise bad_request(f"unknown status {filters['status']!r}")
        for key in ("since", "until"):
            if filters[key] and not _is_date(filters[key]):
                raise bad_request(f"{key} must be a date YYYY-MM-DD, got {filters[key]!r}")
        rows = [o for o in self.data["orders"] if _order_matches(o, filters)]
        rows.sort(key=lambda o: (o["date"], o["id"]), reverse=True)
        return {"orders": [_summary(o) for o in rows], "count": len(rows)}

    def _one(self, table: str, key: str, value: str, what: str) -> JSON:
        for row in self.data[table]:
            if row[key] == value:
                return dict(row)
        raise not_found(f"{what} {value!r}")

    def _order_ref(self, order_id: str) -> JSON:
        for order in self.data["orders"]:
            if order["id"] == order_id:
                return order
        raise not_found(f"order {order_id!r}")

    def _order(self, order_id: str) -> JSON:
        order = self._order_ref(order_id)
        return {**order, "refunded": order.get("refunded", 0.0)}

    # -- writes --------------------------------------------------------------------------

    def _cancel(self, order: JSON, request: Request) -> JSON:
        if order["status"] not in CANCELLABLE:
            raise ServiceError(
                409, "conflict", f"order {order['id']} is {order['status']} and cannot be canceled"
            )
        order["status"] = "canceled"
        return _summary(order)

    def _set_status(self, order: JSON, request: Request) -> JSON:
        status = request.arg("status") or ""
        if status not in self.data["order_statuses"]:
            raise bad_request(f"unknown status {status!r}")
        if status == "canceled":
            return self._cancel(order, request)
        if order["status"] == "canceled":
            raise ServiceError(409, "conflict", f"order {order['id']} is canceled")
        order["status"] = status
        return _summary(order)

    def _refund(self, order: JSON, request: Request) -> JSON:
        amount = _amount(request.body.get("amount", request.query.get("amount")))
        if order["status"] not in REFUNDABLE:
            raise ServiceError(
                409, "conflict", f"order {order['id']} is {order['status']}: nothing to refund yet"
            )
        left = round(order["total"] - order.get("refunded", 0.0), 2)
        if amount > left + 1e-9:
            raise bad_request(f"refund {amount} exceeds the refundable amount {left}")
        order["refunded"] = round(order.get("refunded", 0.0) + amount, 2)
        self.data.setdefault("refunds", []).append({"order_id": order["id"], "amount": amount})
        return _summary(order)


def _amount(raw: Any) -> float:
    if isinstance(raw, bool) or raw is None:
        raise bad_request("refund needs a positive numeric 'amount'")
    try:
        amount = round(float(raw), 2)
    except (TypeError, ValueError):
        raise bad_request(f"amount must be a number, got {raw!r}") from None
    if amount <= 0:
        raise bad_request("refund needs a positive numeric 'amount'")
    return amount


def _is_date(text: str) -> bool:
    parts = text.split("-")
    return len(parts) == 3 and all(p.isdigit() for p in parts) and len(text) == 10


def _order_matches(order: JSON, f: dict[str, str]) -> bool:
    return (
        (not f["customer_id"] or order["customer_id"] == f["customer_id"])
        and (not f["status"] or order["status"] == f["status"])
        and (not f["since"] or order["date"] >= f["since"])
        and (not f["until"] or order["date"] <= f["until"])
        and (not f["sku"] or any(i["sku"] == f["sku"] for i in order["items"]))
    )
