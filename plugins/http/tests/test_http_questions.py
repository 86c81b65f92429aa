"""A tool's question (``ctx.question``, as crab-plan's approval asks) over real HTTP: shown only to
the client streaming the turn, answered only by its token, after it was shown, by a choice."""

from __future__ import annotations

import httpx


def new_session(client: httpx.Client, auth: dict[str, str]) -> str:
    made = client.post("/v1/sessions", headers=auth, json={"title": ""})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def test_a_tools_question_goes_to_the_streaming_client_and_its_answer_reaches_the_tool(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth())
        # nothing is open before the question is shown: an early guess answers nothing
        early = client.post(
            f"/v1/sessions/{sid}/questions/0123456789abcdef", headers=shared.auth(), json={"answer": "1"}
        )
        assert early.status_code == 404
        with client.stream(
            "POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "choose colour"}
        ) as r:
            question = sse(r, stop=lambda e: e["type"] == "question")[-1]
            assert question["text"] == "Which colour?" and question["choices"] == ["red", "blue"]
            assert question["free_text"] is False and question["timeout"] > 0
            path = f"/v1/sessions/{sid}/questions/{question['id']}"
            # another token cannot see or answer it; the permission endpoint does not answer it
            assert client.post(path, headers=shared.auth(shared.other), json={"answer": "red"}).status_code == 404
            permission = f"/v1/sessions/{sid}/permissions/{question['id']}"
            assert client.post(permission, headers=shared.auth(), json={"answer": "once"}).status_code == 404
            # words that are no answer leave it open; a body without an answer is refused
            assert client.post(path, headers=shared.auth(), json={"answer": "green"}).status_code == 422
            assert client.post(path, headers=shared.auth(), json={"choice": 2}).status_code == 422
            assert client.post(path, headers=shared.auth(), json={"answer": "2"}).json() == {"answer": "blue"}
            assert client.post(path, headers=shared.auth(), json={"answer": "red"}).status_code == 404
            rest = sse(r)
        assert rest[0] == {"v": 1, "type": "question_answer", "id": question["id"], "answer": "blue"}
        result = next(e for e in rest if e["type"] == "tool_result")
        assert result["content"] == "picked blue" and not result["is_error"]
