"""Wiki: pages about towns, people and landmarks, with coordinates and facts (read-only)."""

from __future__ import annotations

from symtrace_suite.services.base import (
    JSON,
    Request,
    Service,
    ServiceError,
    bad_request,
    not_found,
)


class Wiki(Service):
    name = "wiki"
    data_file = "wiki.json"

    def route(self, request: Request) -> JSON:
        parts = request.parts
        if request.method != "GET" and parts[:1] in (("search",), ("pages",)):
            raise ServiceError(405, "method_not_allowed", f"{request.method} /{'/'.join(parts)}")
        if parts == ("search",):
            return self._search(request.arg("q") or "")
        if len(parts) == 2 and parts[0] == "pages":
            return self._page(parts[1])
        raise not_found("/" + "/".join(parts))

    def _search(self, q: str) -> JSON:
        words = q.lower().split()
        if not words:
            raise bad_request("missing parameter 'q'")
        hits = []
        for page in self.data["pages"]:
            text = f"{page['title']} {page['summary']}".lower()
            if all(w in text for w in words):
                title_hit = all(w in page["title"].lower() for w in words)
                hits.append((not title_hit, page["slug"], page))
        hits.sort(key=lambda h: (h[0], h[1]))
        results = [
            {"slug": p["slug"], "title": p["title"], "summary": p["summary"]} for *_, p in hits
        ]
        return {"results": results, "count": len(results)}

    def _page(self, slug: str) -> JSON:
        for page in self.data["pages"]:
            if page["slug"] == slug:
                return dict(page)
        raise not_found(f"page {slug!r}")
