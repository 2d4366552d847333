"""A JSON object, as a result, a stream's line or an event's to_json() holds it: one name for the
modules that read and write them."""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]
