"""The MCP server through the official SDK client over stdio: tools, errors, guards and per-call latency."""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
from typing import Any

import pytest
from conftest import Env
from mcp_client import answer as _answer
from mcp_client import close_server as _close
from mcp_client import raw_server as _raw_server
from mcp_client import send as _send
from mcp_client import server_params, timed, tool_error, with_initialize, with_session

pytestmark = pytest.mark.integration


def _seed(env: Env, n: int) -> None:
    """``n`` memories in one transaction (the store a long-lived agent typically has)."""
    from pipeline.commands import _app
    from pipeline.edits import direct_transaction
    from pipeline.state.model import Operation
    from pipeline.store.memory import Memory, render_memory

    _app.STATE.home, _app.STATE.project = env.home, env.project
    svc = _app.services()

    def build(pre: Any) -> list[Operation]:
        return [Operation(f"project_seed-{i:03d}.md", "create", "private", render_memory(Memory(
            name=f"seed {i}", description=f"seed memory number {i} about topic{i % 17}",
            body=f"Seed body {i}: words alpha{i} beta{i % 7} gamma.\n" * 3))) for i in range(n)]

    assert direct_transaction(svc, "seed", build, lock_timeout=5).run_id


def test_tool_errors_carry_the_stable_code_and_change_nothing(env: Env) -> None:
    assert env.run("init").code == 0
    before = env.snapshot()

    async def body(session: Any) -> Any:
        return [await session.call_tool("memory_update", {"name": "project_missing", "body": "x"}),
                await session.call_tool("memory_add", {"name": "../escape", "description": "bad name"}),
                await session.call_tool("memory_consolidate", {"worker": "nonexistent"})]

    missing, bad_name, worker = with_session(env.home, env.project, body)
    assert tool_error(missing)["code"] == "memory.not-found"
    assert tool_error(bad_name)["code"] == "memory.name"
    assert tool_error(worker)["code"] == "usage.worker"  # the one allow-list every entry point checks
    assert env.snapshot() == before


def test_a_safe_memory_with_a_secret_is_refused_over_mcp(env: Env) -> None:
    assert env.run("init").code == 0
    token = "ghp_" + "Q7vR2mK9xL4pW8sT1nB6yC3zH5jD0fG2aE4u"

    async def body(session: Any) -> Any:
        return await session.call_tool("memory_add", {"name": "reference_ci", "description": "ci token",
                                                      "body": f"token {token}", "visibility": "safe"})

    result = with_session(env.home, env.project, body)
    assert tool_error(result)["code"].startswith("privacy")
    assert token not in json.dumps(result.model_dump()) and not (env.mirror / "reference_ci.md").exists()


def test_no_tool_takes_more_than_one_memory_to_forget(env: Env) -> None:
    assert env.run("init").code == 0

    async def body(session: Any) -> Any:
        return (await session.list_tools()).tools

    tools = {t.name: t for t in with_session(env.home, env.project, body)}
    assert set(tools["memory_forget"].input_schema["required"]) == {"name"}
    assert tools["memory_forget"].input_schema["properties"]["name"]["type"] == "string"
    assert not any("clear" in name or "reset" in name for name in tools)


def test_per_call_latency_on_a_200_memory_store(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    assert env.run("init").code == 0
    _seed(env, 200)

    async def body(session: Any) -> dict[str, list[float]]:
        await session.call_tool("memory_search", {"query": "warm up"})
        search = await timed(session, "memory_search", {"query": "topic{i} beta"}, 40)
        add = await timed(session, "memory_add", {"name": "project_lat-{i}", "description": "latency probe {i}",
                                                  "body": "probe {i}"}, 20)
        return {"search": search, "add": add}

    times = with_session(env.home, env.project, body)
    report = {k: {"median_ms": round(statistics.median(v), 2), "p95_ms": round(sorted(v)[int(len(v) * .95)], 2)}
              for k, v in times.items()}
    with capsys.disabled():
        print(f"\nMCP latency on 200 memories: {json.dumps(report)}")
    # Latency is measured and printed, never asserted (that is `memfold bench`'s job); the state is.
    assert len(list(env.harness.glob("project_lat-*.md"))) == 20


def test_a_plan_that_would_empty_the_store_is_refused_over_mcp_after_one_worker_run(env: Env) -> None:
    assert env.run("init").code == 0
    for i in range(2):
        assert env.run("add", f"project_old-{i}", "-d", f"reminder number {i} that expired", "-b", f"x{i}",
                       "--expires", "2020-01-01").code == 0
    before = env.snapshot()
    runs_before = set((env.project_home / "runs").iterdir())

    async def body(session: Any) -> Any:
        return await session.call_tool("memory_consolidate", {})

    result = with_session(env.home, env.project, body)
    assert tool_error(result)["code"] == "mcp.would-clear"
    assert env.snapshot() == before
    new_runs = set((env.project_home / "runs").iterdir()) - runs_before
    assert len(new_runs) == 1 and (next(iter(new_runs)) / "plan.json").is_file()  # one worker run, not two
    # The CLI is the user's own decision: it may empty the store.
    assert env.run("consolidate", "--no-context").code == 0
    assert not any(env.harness.glob("project_old-*.md"))


VAULT_BODY = ("Ask the on-call for the vault path of the staging deploy key before running the release "
              "script on a Friday afternoon.")


def _publish_attempts(env: Env) -> list[Any]:
    async def body(session: Any) -> Any:
        return [await session.call_tool("memory_update", {"name": "user_vault", "visibility": "safe"}),
                await session.call_tool("memory_add", {"name": "user_vault", "description": "the key",
                                                       "body": VAULT_BODY, "visibility": "safe"}),
                await session.call_tool("memory_add", {"name": "project_notes", "description": "release notes",
                                                       "body": "Shared: " + VAULT_BODY, "visibility": "safe"})]

    return with_session(env.home, env.project, body)  # type: ignore[no-any-return]


def test_an_agent_cannot_publish_a_private_memory_over_mcp(env: Env) -> None:
    assert env.run("add", "user_vault", "-d", "where the staging deploy key is kept", "-b", VAULT_BODY).code == 0
    before, mirror = env.snapshot(), {p.name: p.read_bytes() for p in env.mirror.iterdir()}
    results = _publish_attempts(env)
    assert [tool_error(r)["code"] for r in results] == ["mcp.publish-refused"] * 3
    assert all("allow_publish" in tool_error(r)["hint"] for r in results)
    assert "vault path" not in json.dumps([r.model_dump() for r in results])
    assert env.snapshot() == before and {p.name: p.read_bytes() for p in env.mirror.iterdir()} == mirror
    # A safe memory of the agent's own wording is still fine.
    async def body(session: Any) -> Any:
        return await session.call_tool("memory_add", {"name": "project_ports", "description": "dev ports",
                                                      "body": "The dev server listens on 8080.",
                                                      "visibility": "safe"})

    assert not with_session(env.home, env.project, body).is_error
    assert (env.mirror / "project_ports.md").exists()


def test_the_config_may_let_an_agent_publish_what_it_names_but_never_a_copy(env: Env) -> None:
    assert env.run("add", "user_vault", "-d", "where the staging deploy key is kept", "-b", VAULT_BODY).code == 0
    assert env.run("add", "user_payroll", "-d", "payroll export schedule", "-b", "The payroll export for the "
                   "Berlin office runs on the 25th and is mailed to the finance lead as an encrypted zip.").code == 0
    (env.home / "config.yaml").write_text("mcp:\n  allow_publish: true\n")

    async def body(session: Any) -> Any:
        return [await session.call_tool("memory_update", {"name": "user_vault", "visibility": "safe"}),
                await session.call_tool("memory_add", {
                    "name": "project_finance", "description": "finance notes", "visibility": "safe",
                    "body": "Note: the payroll export for the Berlin office runs on the 25th and is mailed "
                            "to the finance lead as an encrypted zip file."})]

    named, copy = with_session(env.home, env.project, body)
    assert not named.is_error and VAULT_BODY in (env.mirror / "user_vault.md").read_text()
    assert tool_error(copy)["code"] == "privacy.publish-near-copy"
    assert "user_payroll.md" in tool_error(copy)["message"]
    assert not (env.mirror / "project_finance.md").exists() and not (env.harness / "project_finance.md").exists()


def test_missing_and_mistyped_arguments_come_back_in_memfolds_error_shape(env: Env) -> None:
    assert env.run("init").code == 0
    before = env.snapshot()

    async def body(session: Any) -> Any:
        return [await session.call_tool("memory_add", {"description": "no name"}),
                await session.call_tool("memory_search", {"query": "x", "limit": "many"}),
                await session.call_tool("memory_nonexistent", {})]

    missing, mistyped, unknown = with_session(env.home, env.project, body)
    assert tool_error(missing) == {"code": "mcp.arguments", "message": "memory_add: 'name' is required",
                                   "hint": "the tool's inputSchema in tools/list names every argument and its type"}
    error = tool_error(mistyped)
    assert error["code"] == "mcp.arguments" and error["message"].startswith("memory_search: 'limit': ")
    assert "many" not in error["message"] and "pydantic" not in json.dumps(mistyped.model_dump())
    assert tool_error(unknown)["code"] == "mcp.unknown-tool"
    assert env.snapshot() == before


def test_the_server_names_its_version_in_server_info(env: Env) -> None:
    from pipeline import __version__

    assert env.run("init").code == 0

    info = with_initialize(env.home, env.project)
    assert info.server_info.name == "memfold" and info.server_info.version == __version__ != ""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_end_the_server_cleanly_while_it_waits_for_input(env: Env, signum: int) -> None:
    assert env.run("init").code == 0
    params = server_params(env.home, env.project)
    proc = subprocess.Popen([params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=params.env, cwd=params.cwd)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
        + b"\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1  # serving, and now blocked on the next line
    proc.send_signal(signum)
    try:
        code = proc.wait(10)
    finally:
        proc.kill()
    stderr = proc.stderr.read() if proc.stderr else b""
    assert code == 0 and b"Traceback" not in stderr, stderr


# --- a bound on each request line, path-like names, receipts from the store only ------------------------


LIST = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "memory_list", "arguments": {}}}


@pytest.mark.parametrize("id_last", [False, True])
def test_a_request_over_the_bound_is_answered_with_an_error_and_the_next_one_is_served(
        env: Env, id_last: bool) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "-b", "a").code == 0
    (env.home / "config.yaml").write_text("mcp:\n  max_request_bytes: 65536\n")
    proc = _raw_server(env.home, env.project)
    padding = "x" * 300_000
    if id_last:  # the TypeScript SDK writes the id after the params
        line = f'{{"method":"tools/call","params":{{"name":"memory_add","arguments":{{"name":"big","description":"d",' \
               f'"body":"{padding}"}}}},"jsonrpc":"2.0","id":"req-2"}}\n'.encode()
    else:
        line = json.dumps({"jsonrpc": "2.0", "id": "req-2", "method": "tools/call", "params": {
            "name": "memory_add", "arguments": {"name": "big", "description": "d", "body": padding}}}).encode() + b"\n"
    _send(proc, line)
    refused = _answer(proc)
    assert refused["id"] == "req-2" and refused["error"]["code"] == -32600
    assert refused["error"]["data"] == {"code": "mcp.request-too-large", "bytes": len(line) - 1, "maxBytes": 65536}
    assert "mcp.max_request_bytes" in refused["error"]["message"]
    _send(proc, LIST)
    listed = _answer(proc)
    assert listed["id"] == 7 and [m["file"] for m in listed["result"]["structuredContent"]["memories"]] == \
        ["project_a.md"]
    assert b"Traceback" not in _close(proc)
    assert not (env.harness / "big.md").exists()


def test_a_request_over_the_bound_cut_by_the_end_of_input_ends_the_server_cleanly(env: Env) -> None:
    assert env.run("init").code == 0
    (env.home / "config.yaml").write_text("mcp:\n  max_request_bytes: 65536\n")
    proc = _raw_server(env.home, env.project)
    _send(proc, b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"x":"' + b"y" * 200_000)
    assert proc.stdin is not None
    proc.stdin.close()
    assert _answer(proc)["error"]["data"]["code"] == "mcp.request-too-large"
    assert proc.wait(30) == 0


def test_the_reader_splits_lines_across_chunks_and_never_holds_a_line_past_the_bound() -> None:
    import os
    import threading

    import anyio

    from pipeline.hosts.mcp_stdio import StdinLines

    short = [f'{{"n": {i}}}'.encode() for i in range(2000)]
    long_line = b'{"jsonrpc":"2.0","id":9,' + b"z" * 3_000_000 + b"}"
    stream = b"\n".join([*short[:1000], long_line, *short[1000:]]) + b"\n" + b'{"last": true}'
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        view = memoryview(stream)
        step = 1
        while view:
            step = step * 7 % 65_521 + 1  # uneven writes: lines split anywhere, many lines per chunk
            os.write(write_fd, view[:step])
            view = view[step:]
        os.close(write_fd)

    refused: list[Any] = []
    held: list[int] = []

    async def read() -> list[str]:
        lines = StdinLines(1 << 20, fd=read_fd)

        async def reply(message: Any) -> None:
            refused.append(message)

        lines.reply = reply
        out = []
        async for line in lines:
            out.append(line)
            held.append(len(lines.pending))
        return out

    writer = threading.Thread(target=feed)
    writer.start()
    got = anyio.run(read)
    writer.join()
    os.close(read_fd)
    assert got == [line.decode() + "\n" for line in short] + ['{"last": true}']
    assert len(refused) == 1 and refused[0].id == 9 and refused[0].error.data["bytes"] == len(long_line)
    assert max(held) <= (1 << 20) + (1 << 16)


@pytest.mark.parametrize("name", ["../seed", "a/../seed", "/seed", "..%2Fseed", "..\\seed", ".seed"])
def test_a_path_like_name_over_mcp_is_refused_as_on_the_command_line(env: Env, name: str) -> None:
    assert env.run("add", "seed.md", "-d", "the seed memory", "-b", "seed body").code == 0
    before = env.snapshot()
    cli = env.run("forget", name)

    async def body(session: Any) -> Any:
        return [await session.call_tool("memory_forget", {"name": name}),
                await session.call_tool("memory_update", {"name": name, "body": "changed"})]

    forget, update = with_session(env.home, env.project, body)
    assert cli.code == 1 and "[memory.name]" in cli.err
    assert tool_error(forget)["code"] == tool_error(update)["code"] == "memory.name"
    assert env.snapshot() == before


def test_memory_verify_reads_receipts_only_from_the_store(env: Env, tmp_path: Any) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "-b", "a").code == 0
    log = sorted((env.project_home / "receipts").iterdir())[-1]
    run_id = json.loads(log.read_bytes())["runId"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "receipt.json").write_bytes(log.read_bytes())  # a valid receipt, outside the store
    (outside / "other.json").write_text("[1, 2, 3]")
    targets = [str(outside / "receipt.json"), str(outside / "other.json"), str(outside / "missing.json"),
               "/etc/passwd", str(env.project_home / "receipts" / ".." / "project.json"),
               str(env.project_home / "receipts" / ".." / "receipts" / ".." / "lock.json")]

    async def body(session: Any) -> Any:
        refused = [await session.call_tool("memory_verify", {"target": target}) for target in targets]
        allowed = [await session.call_tool("memory_verify", {"target": target})
                   for target in (run_id, log.name, str(log), str(env.project_home / "runs" / run_id /
                                                                  "post-receipt.json"))]
        return refused, allowed

    refused, allowed = with_session(env.home, env.project, body)
    errors = [tool_error(result) for result in refused]
    assert len({json.dumps(error, sort_keys=True) for error in errors}) == 1  # no oracle: one answer for all
    assert errors[0]["code"] == "mcp.verify-target" and str(outside) not in errors[0]["message"]
    for result in allowed:
        assert not result.is_error and result.structured_content["ok"] is True, result


def test_the_real_server_sees_a_file_saved_in_place_and_a_write_by_another_process(env: Env) -> None:
    for name, words in (("project_db", "the database listens on port 5433"), ("project_docs", "docs use mkdocs"),
                        ("project_ci", "CI runs on every push")):
        assert env.run("add", name, "-d", words, "-b", words).code == 0
    path = env.harness / "project_db.md"

    async def files(session: Any, query: str) -> list[str]:
        result = await session.call_tool("memory_search", {"query": query})
        assert not result.is_error, result.content
        return [r["file"] for r in result.structured_content["results"]]

    async def body(session: Any) -> Any:
        seen = [await files(session, "mkdocs"), await files(session, "mkdocs")]  # the second from the kept view
        data = path.read_bytes()
        with open(path, "r+b") as handle:  # an editor saving in place: same inode, the folder's stat unchanged
            handle.truncate(0)
            handle.write(data.replace(b"port 5433", b"port 5433 behind pgbouncer"))
        seen.append(await files(session, "pgbouncer"))
        assert env.run("add", "project_cache", "-d", "the cache is valkey", "-b", "valkey").code == 0
        seen.append(await files(session, "valkey"))
        assert env.run("forget", "project_cache").code == 0
        seen.append(await files(session, "valkey"))
        return seen

    assert with_session(env.home, env.project, body) == [
        ["project_docs.md"], ["project_docs.md"], ["project_db.md"], ["project_cache.md"], []]
