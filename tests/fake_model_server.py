"""A model provider on 127.0.0.1 for the real agent CLIs: Anthropic Messages and OpenAI Responses/Chat."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pipeline.planner.run import plan_run

# The task names files inside the run dir (task.md, manifest.json): the run dir is their parent.
RUN_DIR = re.compile(r"(/[^\s\"'`<>()\[\]{}]*?/runs/\d{8}T\d{6}Z-[0-9a-f]{8})(?=/|\b)")
_HIDDEN_HEADERS = {"authorization", "x-api-key", "cookie", "proxy-authorization"}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes

    @property
    def text(self) -> str:
        """Every string in the JSON body, joined: what the model was told."""
        return "\n".join(_strings(self.body))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def run_dir_of(text: str) -> Path | None:
    found = RUN_DIR.search(text)
    return Path(found.group(1)) if found else None


def plan_reply(text: str) -> str:
    """What the built-in worker would print for the run the prompt names, as an agent's final message."""
    run_dir = run_dir_of(text)
    if run_dir is None:
        return "I could not find the task."
    return plan_run(run_dir).decode()


def prose_reply(text: str) -> str:
    return "I consolidated the memories. PASSED: every check is green."


def two_plans_reply(text: str) -> str:
    """A model that hedges: the run's plan, then a second one that differs in a summary."""
    plan = json.loads(plan_reply(text))
    other = {**plan, "report": [{**r, "summary": r["summary"] + " (second opinion)"} for r in plan["report"]]}
    return json.dumps(plan, indent=2) + "\n" + json.dumps(other, indent=2)


def drops_facts_reply(text: str) -> str:
    """A model that deletes a memory and says nowhere where its content went."""
    plan = json.loads(plan_reply(text))
    for op in plan["operations"]:
        op.pop("into", None)
    return json.dumps(plan, indent=2)


Reply = Callable[[str], str]
# One assistant turn of a scripted Anthropic conversation: its content blocks (text, tool_use, ...).
Turn = list[dict[str, Any]]


@dataclass
class FakeModelServer:
    """Answers every model call with ``reply(prompt text)``; logs each request (auth headers dropped).

    With ``turns``, each Anthropic Messages call takes the next scripted turn instead (tool_use blocks
    included, stop reason ``tool_use`` when it has any); past the script it ends the conversation.
    """

    reply: Reply = plan_reply
    requests: list[Request] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    turns: list[Turn] | None = None
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeModelServer:
        owner = self

        class Handler(_Handler):
            server_owner = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def model_calls(self) -> list[Request]:
        return [r for r in self.requests if _is_model_call(r.path)]


def _is_model_call(path: str) -> bool:
    path = path.split("?", 1)[0]
    return path.endswith(("/messages", "/responses", "/chat/completions"))


class _Handler(BaseHTTPRequestHandler):
    server_owner: FakeModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # the base class's parameter name
        pass  # the request log is the record; stderr noise would only hide test output

    def _record(self) -> Request:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in _HIDDEN_HEADERS}
        request = Request(self.command, self.path, headers, body, raw)
        self.server_owner.requests.append(request)
        return request

    def do_GET(self) -> None:
        request = self._record()
        if request.path.split("?", 1)[0].endswith("/models"):
            self._json(200, {"object": "list", "data": [], "models": []})
        else:
            self._json(404, {"error": {"type": "not_found", "message": "not served here"}})

    def do_HEAD(self) -> None:
        # Claude Code probes the base URL first; a HEAD answer carries no body on a kept-alive connection.
        self._record()
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        request = self._record()
        path = request.path.split("?", 1)[0]
        body = request.body if isinstance(request.body, dict) else {}
        if path.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": max(1, len(request.raw) // 4)})
            return
        if not _is_model_call(path):
            self._json(404, {"error": {"type": "not_found", "message": "not served here"}})
            return
        model = str(body.get("model") or "fake-model")
        stream = body.get("stream") is True
        if self.server_owner.turns is not None and path.endswith("/messages") and not stream:
            turns = self.server_owner.turns
            self._anthropic_turn(model, turns.pop(0) if turns else [{"type": "text", "text": "Done."}])
            return
        text = self.server_owner.reply(request.text)
        self.server_owner.replies.append(text)
        if path.endswith("/messages"):
            self._anthropic(model, text, stream)
        elif path.endswith("/responses"):
            self._responses(model, text, stream)
        else:
            self._chat(model, text, stream)

    # -- wire formats --

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str | None, Any]]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            payload = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write(f"{head}data: {payload}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True

    def _anthropic(self, model: str, text: str, stream: bool) -> None:
        usage = {"input_tokens": 10, "output_tokens": max(1, len(text) // 4),
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        message = {"id": "msg_fake01", "type": "message", "role": "assistant", "model": model,
                   "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}
        if not stream:
            self._json(200, {**message, "content": [{"type": "text", "text": text}]})
            return
        self._sse([
            ("message_start", {"type": "message_start",
                               "message": {**message, "content": [], "stop_reason": None,
                                           "usage": {**usage, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            *[("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": part}}) for part in _chunks(text)],
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": usage["output_tokens"]}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    def _anthropic_turn(self, model: str, blocks: Turn) -> None:
        uses = any(block.get("type") == "tool_use" for block in blocks)
        self._json(200, {"id": "msg_fake01", "type": "message", "role": "assistant", "model": model,
                         "content": blocks, "stop_reason": "tool_use" if uses else "end_turn",
                         "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 10}})

    def _responses(self, model: str, text: str, stream: bool) -> None:
        created = int(time.time())
        item = {"id": "msg_fake01", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": max(1, len(text) // 4), "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 10 + max(1, len(text) // 4)}
        response = {"id": "resp_fake01", "object": "response", "created_at": created, "model": model,
                    "status": "completed", "output": [item], "usage": usage}
        if not stream:
            self._json(200, response)
            return
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"type": "response.created",
                                  "response": {**response, "status": "in_progress", "output": []}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                            "item": {**item, "status": "in_progress", "content": []}}),
            ("response.content_part.added", {"type": "response.content_part.added", "item_id": item["id"],
                                             "output_index": 0, "content_index": 0,
                                             "part": {"type": "output_text", "text": "", "annotations": []}}),
            *[("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                              "output_index": 0, "content_index": 0, "delta": part})
              for part in _chunks(text)],
            ("response.output_text.done", {"type": "response.output_text.done", "item_id": item["id"],
                                           "output_index": 0, "content_index": 0, "text": text}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": response}),
        ]
        self._sse([(name, {**data, "sequence_number": n}) for n, (name, data) in enumerate(events)])

    def _chat(self, model: str, text: str, stream: bool) -> None:
        base = {"id": "chatcmpl-fake01", "created": int(time.time()), "model": model}
        usage = {"prompt_tokens": 10, "completion_tokens": max(1, len(text) // 4),
                 "total_tokens": 10 + max(1, len(text) // 4)}
        if not stream:
            self._json(200, {**base, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]})
            return
        chunk = {**base, "object": "chat.completion.chunk"}
        self._sse([
            *[(None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": part},
                                            "finish_reason": None}]}) for part in _chunks(text)],
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}),
            (None, "[DONE]"),
        ])


def _chunks(text: str, size: int = 400) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]
