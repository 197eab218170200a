"""Routing: travel distance/time between coordinates and the nearest point of interest.

Like the OSRM service WebArena tasks use, reduced to a deterministic model: road distance is
the great-circle distance times a fixed detour factor, time is distance over a per-profile
speed. Coordinates outside the service area are a 400 (e.g. latitude and longitude swapped).
"""

from __future__ import annotations

import math

from symtrace_suite.services.base import (
    JSON,
    Request,
    Service,
    ServiceError,
    bad_request,
    not_found,
    number,
)

EARTH_RADIUS_KM = 6371.0


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(a))


def hms(seconds: int) -> str:
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Route(Service):
    name = "route"
    data_file = "route.json"

    def route(self, request: Request) -> JSON:
        parts = request.parts
        if request.method != "GET" and parts[:1] in (("travel",), ("nearest",), ("pois",)):
            raise ServiceError(405, "method_not_allowed", f"{request.method} /{'/'.join(parts)}")
        if parts == ("travel",):
            return self._travel(request)
        if parts == ("nearest",):
            return self._nearest(request)
        if parts == ("pois",):
            kind = request.arg("kind") or ""
            rows = [p for p in self.data["pois"] if not kind or p["kind"] == kind]
            return {"pois": rows, "count": len(rows)}
        raise not_found("/" + "/".join(parts))

    def trip(self, a: tuple[float, float], b: tuple[float, float], profile: str) -> JSON:
        speeds = self.data["speed_kmh"]
        if profile not in speeds:
            raise bad_request(f"unknown profile {profile!r} (one of {', '.join(sorted(speeds))})")
        km = round(haversine_km(*a, *b) * self.data["detour_factor"], 2)
        seconds = round(km / speeds[profile] * 3600)
        return {
            "distance_km": km,
            "duration_s": seconds,
            "duration": hms(seconds),
            "profile": profile,
        }

    def _point(self, request: Request, lat_key: str, lon_key: str) -> tuple[float, float]:
        lat, lon = number(request, lat_key), number(request, lon_key)
        area = self.data["area"]
        if not (
            area["lat"][0] <= lat <= area["lat"][1] and area["lon"][0] <= lon <= area["lon"][1]
        ):
            raise bad_request(
                f"coordinates ({lat}, {lon}) are outside the service area "
                f"(lat {area['lat'][0]}..{area['lat'][1]}, lon {area['lon'][0]}..{area['lon'][1]})"
            )
        return lat, lon

    def _travel(self, request: Request) -> JSON:
        a = self._point(request, "from_lat", "from_lon")
        b = self._point(request, "to_lat", "to_lon")
        return self.trip(a, b, request.arg("profile") or "car")

    def _nearest(self, request: Request) -> JSON:
        origin = self._point(request, "lat", "lon")
        kind = request.arg("kind") or ""
        pois = [p for p in self.data["pois"] if p["kind"] == kind]
        if not pois:
            kinds = sorted({p["kind"] for p in self.data["pois"]})
            raise bad_request(f"unknown kind {kind!r} (one of {', '.join(kinds)})")
        best = min(pois, key=lambda p: (haversine_km(*origin, p["lat"], p["lon"]), p["id"]))
        trip = self.trip(origin, (best["lat"], best["lon"]), "car")
        return {**best, "distance_km": trip["distance_km"]}
