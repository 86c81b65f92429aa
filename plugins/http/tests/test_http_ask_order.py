"""crab-http's SSE stream carries a tool call's ``tool_call`` event before the
``permission_request`` about it (issue 42 item 7), for a provider that streams its calls and for
one whose calls come only with its reply. The real ``crab serve http`` on 127.0.0.1, httpx as
the client."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

ORDER_PLUGIN = '''
"""A provider for the order test: each prompt gets some text and a call of crab-http's test tool
``jot`` (write: asked about), then an answer; model ``unstreamed`` streams no ToolCallEvent."""
import crab
from crab.testing import ScriptedProvider


def reply(request):
    if request.messages[-1].role == "tool":
        return [{"text": "all noted"}]
    return [
        {"text": "Noting two things."},
        {"tool": "peek", "args": {"what": "the list"}},
        {"tool": "jot", "args": {"note": "milk"}},
    ]


class Order:
    name = "order"

    def __init__(self):
        self.engine = ScriptedProvider(reply)

    def models(self):
        return [crab.ModelInfo(id="streamed", provider="order"), crab.ModelInfo(id="unstreamed", provider="order")]

    def check(self, model):
        return None

    async def stream(self, request):
        async for event in self.engine.stream(request):
            if request.model == "streamed" or not isinstance(event, crab.events.ToolCallEvent):
                yield event


@crab.hookimpl
def crab_providers(config):
    return [Order()]
'''


def with_order_provider(home: Any) -> None:
    site = home.root / "site"
    (site / "crab_http_order.py").write_text(ORDER_PLUGIN)
    dist = site / "crab_http_order-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-http-order\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nhttp-order = crab_http_order\n")
    home.env["CRAB_PLUGINS"] += ",http-order"


@pytest.mark.parametrize("model", ["streamed", "unstreamed"])
def test_http_the_tool_call_event_comes_before_its_permission_question(home, serve, sse, model: str) -> None:
    with_order_provider(home)
    token = home.token("laptop")
    served = serve("-m", f"order/{model}")  # the last -m is the one crab serve takes
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        made = client.post("/v1/sessions", headers=auth, json={"title": "order"})
        assert made.status_code == 201, made.text
        sid = made.json()["id"]
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "note it"}) as r:
            before = sse(r, stop=lambda e: e["type"] == "permission_request")
            question = before[-1]
            assert question["type"] == "permission_request" and question["tool"] == "jot", before
            answered = client.post(
                f"/v1/sessions/{sid}/permissions/{question['id']}", headers=auth, json={"answer": "once"}
            )
            assert answered.status_code == 200, answered.text
            rest = sse(r)
    calls = [e["call"]["name"] for e in before if e["type"] == "tool_call"]
    assert calls == ["peek", "jot"], [e["type"] for e in before]
    kinds = [e["type"] for e in before]
    assert kinds.index("text_delta") < kinds.index("tool_call")  # the reply's text, then its calls
    everything = before + rest
    assert [e["call"]["name"] for e in everything if e["type"] == "tool_call"] == ["peek", "jot"]  # each once
    results = [e["content"] for e in everything if e["type"] == "tool_result"]
    assert sorted(results) == ["noted milk", "saw the list"]
    assert everything[-1]["type"] == "turn_end" and everything[-1]["text"] == "all noted"
