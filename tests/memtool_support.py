"""Driving the memory tool through the real Anthropic SDK: a scripted model on 127.0.0.1 and its tool runner."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
from conftest import Env
from fake_model_server import FakeModelServer

from pipeline.hosts.memory_tool import LOG_NAME

# A Slack bot token of the documented shape, assembled so that no scanner of this repository trips on it.
SLACK_TOKEN = "xoxb-" + "2849301756" + "-" + "7730194628" + "-" + "aB3dE5gH7jK9mN1pQ3sT5vW7"


def use(command: str, **fields: Any) -> dict[str, Any]:
    """One ``tool_use`` input of the memory tool (its id is given when a session sends it)."""
    return {"command": command, **fields}


@dataclass
class Session:
    """A conversation: every model turn is scripted, the SDK's tool runner carries out the tool calls."""

    server: FakeModelServer
    tool: Any
    sent: int = 0
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=self.server.url, api_key="test-key", max_retries=0)

    def turns(self, *turns: list[Any]) -> list[list[dict[str, Any]]]:
        """Each turn's inputs as content blocks; a raw block (a dict with a ``type``) is sent as it is."""
        out = []
        for turn in turns:
            blocks = []
            for item in turn:
                if isinstance(item, dict) and item.get("type") == "tool_use":
                    blocks.append(item)
                    continue
                self.sent += 1
                blocks.append({"type": "tool_use", "id": f"toolu_{self.sent:04d}", "name": "memory", "input": item})
            out.append(blocks)
        return out

    def run(self, *turns: list[Any]) -> list[dict[str, Any]]:
        """Run the conversation to its end; the tool results the model received, in the order sent."""
        before = len(self.server.requests)
        self.server.turns = self.turns(*turns)
        runner = self.client().beta.messages.tool_runner(
            model="claude-test", max_tokens=1024, tools=[self.tool],
            messages=[{"role": "user", "content": "Keep notes of what we do in your memory."}])
        runner.until_done()
        received = []
        for request in self.server.requests[before:]:
            body = request.body if isinstance(request.body, dict) else {}
            for message in body.get("messages", []):
                content = message.get("content")
                if message.get("role") == "user" and isinstance(content, list):
                    received.extend(b for b in content if b.get("type") == "tool_result")
        for block in received:
            self.results[block["tool_use_id"]] = block
        return received

    def one(self, command: dict[str, Any]) -> dict[str, Any]:
        """One tool call in a turn of its own; its tool result."""
        results = self.run([command])
        assert len(results) == 1, results
        return results[0]


def text_of(result: dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def refused(result: dict[str, Any]) -> str:
    assert result.get("is_error") is True, result
    return text_of(result)


def answered(result: dict[str, Any]) -> str:
    assert not result.get("is_error"), result
    return text_of(result)


def log_entries(env: Env) -> list[dict[str, Any]]:
    path = env.home / "logs" / LOG_NAME
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def receipts(env: Env) -> list[Path]:
    folder = env.home / "projects"
    if not folder.exists():
        return []
    return sorted(p for home in folder.iterdir() for p in (home / "receipts").glob("*.json"))


def receipt_commands(env: Env) -> list[str]:
    return [json.loads(p.read_bytes())["command"] for p in receipts(env)]
