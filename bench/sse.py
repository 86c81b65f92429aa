"""SSE parsing benchmark: one large OpenAI-style chat-completions stream, parsed by crab and by
the official ``openai`` package, side by side in one run on the same bytes in the same pieces.

- crab: ``crab_provider_kit.SSEDecoder`` + ``crab_provider_openai``'s ``ChatStreamParser`` -> stream
  events and the complete final message (text, tool calls with parsed arguments, usage).
- openai chunks: ``openai.Stream`` -> ``ChatCompletionChunk`` objects, what
  ``client.chat.completions.create(stream=True)`` yields (its SSE decoder, JSON, model building).
- openai accumulated: the same plus ``ChatCompletionStreamState``, which assembles the final
  message as crab does (what ``client.chat.completions.stream()`` runs).
- openai decoder + json: openai's SSE decoder and ``json.loads`` only, no objects: a floor.

Neither side does HTTP: both read the bytes from memory. Target: crab at least as fast as
openai's chunk parsing. ``openai`` is not a crab dependency: ``pip install openai`` to compare.

``--shape llamacpp`` builds the tool-call chunks as llama-cpp-python's server sends them
(llama_chat_format.py ``_convert_completion_to_chat_function``): id and name repeated in every
chunk, the legacy ``function_call`` beside ``tool_calls`` with the same fragment, null fields,
one call at a time, no usage. Both parsers must still agree on one call per call.

    python bench/sse.py [--chunks 20000] [--runs 3] [--stream PATH] [--shape openai|llamacpp]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from crab._contracts.events import MessageEnd
from crab._contracts.messages import AssistantMessage
from crab_provider_kit import SSEDecoder
from crab_provider_openai.parser import ChatStreamParser

PIECE = 16 * 1024
"""Bytes per read, about what an HTTP client hands over per network read."""

WORDS = [
    "the",
    "a",
    "crab",
    "plugin",
    "stream",
    "parser",
    "token",
    "delta",
    "model",
    "tool",
    "call",
    "result",
    "value",
    "is",
    "of",
    "to",
    "and",
    "in",
]


def build_stream(chunks: int, seed: int = 7) -> bytes:
    """A recorded-style stream: text deltas, three parallel tool calls interleaved by index, usage."""
    rng = random.Random(seed)
    head = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1732000000,
        "model": "gpt-4.1-mini-2025-04-14",
        "system_fingerprint": "fp_bench",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    text_chunks = int(chunks * 0.8)
    for _ in range(text_chunks):
        out.append(chunk({"content": " " + rng.choice(WORDS) + rng.choice(("", ",", ".", "\n"))}))
    for index in range(3):
        first = {
            "index": index,
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": "read", "arguments": ""},
        }
        out.append(chunk({"tool_calls": [first]}))
    for index in range(3):
        prefix = f'{{"path": "src/file_{index}.py", "lines": ['
        out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": prefix}}]}))
    fragments = chunks - text_chunks - 7
    for n in range(fragments):
        piece = f"{n}, " if n < fragments - 3 else f"{n}]}}"
        out.append(chunk({"tool_calls": [{"index": n % 3, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 5000, "completion_tokens": chunks, "total_tokens": 5000 + chunks}
    out.append(b"data: " + json.dumps({**head, "choices": [], "usage": usage}).encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def build_llamacpp_stream(chunks: int, seed: int = 7) -> bytes:
    """Text, then one tool call (that server makes one per reply), chunks as llama-cpp-python sends them."""
    rng = random.Random(seed)
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1732000000, "model": "local"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {**head, "choices": [{"index": 0, "finish_reason": finish, "logprobs": None, "delta": delta}]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    empty = {"role": None, "content": None, "function_call": None, "tool_calls": None}
    out = [chunk({**empty, "role": "assistant"})]
    text_chunks = int(chunks * 0.8)
    for _ in range(text_chunks):
        out.append(chunk({"content": " " + rng.choice(WORDS) + rng.choice(("", ",", ".", "\n"))}))
    count = chunks - text_chunks - 3
    fragments = ['{"path": "src/file.py", "lines": [', *(f"{n}, " for n in range(count - 2)), f"{count}]}}"]
    for fragment in fragments:
        function = {"name": "read", "arguments": fragment}
        call = {"index": 0, "id": "call__0_read_cmpl-bench", "type": "function", "function": function}
        out.append(chunk({**empty, "function_call": function, "tool_calls": [call]}))
    out.append(chunk(empty, "tool_calls"))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + PIECE] for i in range(0, len(data), PIECE)]


def run_crab(parts: list[bytes]) -> AssistantMessage:
    decoder = SSEDecoder()
    parser = ChatStreamParser("gpt-4.1-mini")
    for part in parts:
        for sse in decoder.feed(part):
            parser.feed(sse)
        if parser.done:
            break
    end = parser.finish()[-1]
    assert isinstance(end, MessageEnd)
    return end.message


class _Replay:
    """The one thing ``openai.Stream`` reads from its response: ``iter_bytes``."""

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    def iter_bytes(self) -> Iterator[bytes]:
        return iter(self.parts)

    def close(self) -> None:
        return None


def openai_runners() -> dict[str, Callable[[list[bytes]], Any]]:
    import openai
    from openai import OpenAI, Stream
    from openai._streaming import SSEDecoder as OpenAISSEDecoder
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    client = OpenAI(api_key="bench-not-a-key", base_url="http://127.0.0.1:9/v1")

    def chunks(parts: list[bytes]) -> int:
        count = 0
        for _ in Stream(cast_to=ChatCompletionChunk, response=_Replay(parts), client=client):  # type: ignore[arg-type]
            count += 1
        return count

    def accumulated(parts: list[bytes]) -> Any:
        state: Any = ChatCompletionStreamState()
        for item in Stream(cast_to=ChatCompletionChunk, response=_Replay(parts), client=client):  # type: ignore[arg-type]
            state.handle_chunk(item)
        return state.get_final_completion().choices[0].message

    def decoder_json(parts: list[bytes]) -> int:
        count = 0
        for sse in OpenAISSEDecoder().iter_bytes(iter(parts)):
            if sse.data.startswith("[DONE]"):
                break
            json.loads(sse.data)
            count += 1
        return count

    print(f"openai {openai.__version__}")
    return {
        f"openai {openai.__version__} chunks": chunks,
        f"openai {openai.__version__} accumulated": accumulated,
        f"openai {openai.__version__} decoder + json": decoder_json,
    }


def timed(fn: Callable[[list[bytes]], Any], parts: list[bytes], runs: int) -> list[float]:
    fn(parts)  # warm caches and lazy imports outside the measurement
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn(parts)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=20_000, help="chunks in the built stream")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stream", type=Path, help="load this recorded stream, or save the built one there")
    ap.add_argument("--shape", choices=("openai", "llamacpp"), default="openai", help="how the built stream looks")
    args = ap.parse_args()

    if args.stream and args.stream.exists():
        data = args.stream.read_bytes()
        source = str(args.stream)
    else:
        data = (build_llamacpp_stream if args.shape == "llamacpp" else build_stream)(args.chunks)
        source = f"built ({args.shape}), {args.chunks:,} chunks"
        if args.stream:
            args.stream.write_bytes(data)
    parts = pieces(data)
    events = data.count(b"\n\n")
    print(f"python {sys.version.split()[0]}; stream: {source}; {len(data) / 1e6:.1f} MB, {events:,} SSE events")

    message = run_crab(parts)
    runners: dict[str, Callable[[list[bytes]], Any]] = {"crab": run_crab}
    try:
        runners.update(openai_runners())
    except ImportError:
        print("openai is not installed: comparison skipped (pip install openai to run it)")
    else:
        theirs = runners[next(k for k in runners if k.endswith("accumulated"))](parts)
        # Same bytes, same answer: the comparison is only fair if both parse everything.
        assert theirs.content == message.content, "crab and openai disagree on the text"
        their_args = [json.loads(c.function.arguments) for c in theirs.tool_calls]
        assert their_args == [c.arguments for c in message.tool_calls], "crab and openai disagree on tool calls"

    results: dict[str, float] = {}
    print(f"\n{'parser':<40} {'median s':>9} {'best s':>8} {'MB/s':>7} {'us/event':>9}")
    for name, fn in runners.items():
        times = timed(fn, parts, args.runs)
        median = statistics.median(times)
        results[name] = median
        print(
            f"{name:<40} {median:>9.3f} {min(times):>8.3f} {len(data) / 1e6 / median:>7.1f} {median / events * 1e6:>9.2f}"
        )

    crab_time = results["crab"]
    if len(results) > 1:
        print()
        for name, value in results.items():
            if name != "crab":
                print(f"{name} / crab: {value / crab_time:.2f}x")
        chunks_name = next(k for k in results if k.endswith("chunks"))
        verdict = "met" if results[chunks_name] >= crab_time else "NOT met"
        print(f"target (crab at least as fast as openai's chunk parsing): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
