"""Names, config checks, environment and result conversion: plain functions, no server."""

from __future__ import annotations

import pytest
from crab import InvalidValue
from crab_mcp.errors import http_status_line
from crab_mcp.manager import MAX_DESCRIPTION, describe
from crab_mcp.names import PATTERN, crab_name
from crab_mcp.results import to_tool_result
from crab_mcp.settings import (
    TABLE,
    MissingVariable,
    ServerConfig,
    check_server,
    child_env,
    resolve_refs,
    secret_values,
    server_configs,
)
from mcp import types


@pytest.mark.parametrize(
    ("prefix", "tool"),
    [
        ("git_", "status"),
        ("fs_", "read.file"),
        ("a b_", "tool/with spaces"),
        ("srv_", "x" * 128),
        ("", "ünïcode-tool"),
        ("p_", ""),
    ],
)
def test_every_crab_name_is_one_providers_accept(prefix: str, tool: str):
    assert PATTERN.match(crab_name(prefix, tool))


def test_a_fitting_name_is_kept_and_an_odd_one_is_mapped_stably():
    assert crab_name("git_", "status") == "git_status"
    assert crab_name("fs_", "read.file") == "fs_read_file"
    long = "x" * 100
    assert crab_name("s_", long) == crab_name("s_", long)
    assert len(crab_name("s_", long)) == 64


def test_names_that_clash_after_mapping_stay_distinct():
    first = crab_name("s_", "a.b")
    second = crab_name("s_", "a-b" if first != "s_a-b" else "a_b", {first})
    third = crab_name("s_", "a/b", {first, second})
    assert len({first, second, third}) == 3
    assert crab_name("s_", "a_b", {"s_a_b"}) != "s_a_b"


def test_server_table_errors_name_the_key_and_what_was_expected():
    with pytest.raises(InvalidValue, match=r"servers\.x: expected exactly one of command"):
        check_server("x", {"args": ["a"]})
    with pytest.raises(InvalidValue, match=r"servers\.x: expected exactly one of command"):
        check_server("x", {"command": "a", "url": "http://h/mcp"})
    with pytest.raises(InvalidValue, match=r"servers\.x\.timeout: expected a number > 0, found -1"):
        check_server("x", {"command": "a", "timeout": -1})
    with pytest.raises(InvalidValue, match=r"servers\.x\.url: expected a string starting with http"):
        check_server("x", {"url": "file:///etc/passwd"})
    with pytest.raises(InvalidValue, match=r"servers\.x\.permission: expected one of read"):
        check_server("x", {"command": "a", "permission": "root"})
    with pytest.raises(InvalidValue, match=r"servers\.x\.comand: expected one of command"):
        check_server("x", {"comand": "a"})
    check_server("ok", {"command": "a", "args": ["b"], "env": {"K": "${V}"}, "permissions": {"t": "read"}})


def test_the_servers_table_is_trust_only():
    setting = TABLE.setting("servers")
    assert setting is not None and setting.trust_only
    serve = TABLE.setting("serve_permissions")
    assert serve is not None and serve.trust_only and serve.default == ["read"]


def test_server_configs_fill_defaults_from_the_plugin_table():
    (cfg,) = server_configs({"timeout": 7.0, "connect_timeout": 3.0, "servers": {"git": {"command": "g"}}})
    assert (cfg.timeout, cfg.connect_timeout, cfg.tool_prefix, cfg.permission) == (7.0, 3.0, "git_", "network")
    assert cfg.transport == "stdio"


def test_include_exclude_and_per_tool_permission():
    cfg = ServerConfig("s", command="c", include=("a", "b"), exclude=("b",), permissions={"a": "read"})
    assert [t for t in ("a", "b", "c") if cfg.wants(t)] == ["a"]
    assert cfg.permission_of("a") == "read" and cfg.permission_of("z") == "network"


def test_env_references_resolve_from_the_users_environment_and_a_missing_one_names_the_variable():
    assert resolve_refs({"K": "Bearer ${TOKEN}"}, {"TOKEN": "s3cret"}, "header") == {"K": "Bearer s3cret"}
    with pytest.raises(MissingVariable, match=r"env K references \$\{NOPE\}") as caught:
        resolve_refs({"K": "${NOPE}"}, {"OTHER": "x"}, "env")
    assert "x" not in str(caught.value).replace("expected", "")


def test_a_stdio_server_gets_only_the_safe_set_plus_its_env():
    environ = {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-xyz", "AWS_SECRET": "a"}
    cfg = ServerConfig("s", command="c", env={"TOKEN": "${AWS_SECRET}", "MODE": "fast"})
    env = child_env(cfg, environ)
    assert env == {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "TOKEN": "a", "MODE": "fast"}
    assert secret_values(ServerConfig("s", command="c", env={"T": "${K}"}), {"K": "longsecret"}) == ["longsecret"]


def test_results_join_text_note_images_and_keep_structured_content():
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="one"),
            types.ImageContent(type="image", data="aGVsbG8gd29ybGQh", mime_type="image/png"),
            types.ResourceLink(type="resource_link", uri="file:///x.txt", name="x"),
            types.EmbeddedResource(
                type="resource", resource=types.TextResourceContents(uri="file:///y", text="inside")
            ),
            types.EmbeddedResource(
                type="resource", resource=types.BlobResourceContents(uri="file:///z", blob="AAAA", mime_type="a/b")
            ),
        ],
        structured_content={"n": 1},
    )
    converted = to_tool_result(result)
    lines = converted.content.splitlines()
    assert lines[0] == "one"
    assert lines[1] == "[image image/png, about 12 bytes, not shown]"
    assert "file:///x.txt" in lines[2] and lines[3] == "inside" and "file:///z" in lines[4]
    assert converted.details["structured_content"] == {"n": 1}
    assert not converted.is_error


def test_structured_only_results_become_json_and_is_error_stays_an_error():
    assert to_tool_result(types.CallToolResult(content=[], structured_content={"a": [1]})).content == '{"a": [1]}'
    failed = to_tool_result(types.CallToolResult(content=[types.TextContent(type="text", text="bad")], is_error=True))
    assert failed.is_error and failed.content == "bad"
    assert to_tool_result(types.CallToolResult(content=[])).content == "(no output)"


def test_a_huge_description_is_cut_before_it_reaches_every_request():
    tool = types.Tool(name="wordy", description="Says a lot. " + "word " * 20_000, input_schema={"type": "object"})
    text = describe("srv", tool)
    assert text.startswith("Says a lot. word")
    assert len(text) < MAX_DESCRIPTION + 200
    assert "[… cut: the server's description has 100,011 characters]" in text
    assert text.endswith("(MCP tool 'wordy' of server 'srv')")
    short = types.Tool(name="t", description="Short.", input_schema={"type": "object"})
    assert describe("srv", short) == "Short.\n\n(MCP tool 't' of server 'srv')"


def test_http_error_statuses_say_the_status_and_what_to_check_never_a_value():
    headers = {"Authorization": "Bearer ${TOKEN}", "X-Team": "${TEAM} fixed"}
    assert http_status_line(401, "Unauthorized", "s", headers) == (
        "the server answered HTTP 401 Unauthorized: check the Authorization, X-Team headers in "
        "[plugins.mcp.servers.s] and the value of ${TEAM}, ${TOKEN} in your environment"
    )
    assert http_status_line(403, "Forbidden", "s", {"X-Key": "literal"}) == (
        "the server answered HTTP 403 Forbidden: the key was refused for this server; "
        "check the X-Key header in [plugins.mcp.servers.s]"
    )
    assert http_status_line(401, "", "s", {}).startswith("the server answered HTTP 401: it wants a key; add headers")
    assert (
        http_status_line(503, "Service Unavailable", "s", headers) == "the server answered HTTP 503 Service Unavailable"
    )


def test_sdk_records_go_to_the_servers_log_and_elsewhere_to_pythons_usual_place(tmp_path, root_records):
    import logging

    from crab_mcp import sdklog
    from crab_mcp.logpump import LogSink

    sdklog.install()
    log = tmp_path / "s.log"
    sink = LogSink(open(log, "w", encoding="utf-8"), ["hunter2-secret"], 10_000)
    token = sdklog.current.set(sink)
    try:
        try:
            raise ValueError("bad line hunter2-secret\nsecond line")
        except ValueError:
            logging.getLogger("mcp.client.stdio").exception("Failed to parse JSONRPC message from server")
    finally:
        sdklog.current.reset(token)
        sink.close()
    logging.getLogger("mcp.server").warning("outside any server")
    # Only the record outside a server reached the root logger's handlers.
    assert [r.getMessage() for r in root_records] == ["outside any server"]
    text = log.read_text()
    assert text.startswith("[mcp sdk error] Failed to parse JSONRPC message from server: ValueError: bad line")
    assert "hunter2-secret" not in text and "Traceback" not in text and len(text.splitlines()) == 1


def test_image_content_becomes_an_image_of_the_result_and_survives_the_fence():
    import base64

    from crab.testing import make_png
    from crab_mcp.fence import fenced

    png = make_png(2, 2)
    data = base64.b64encode(png).decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="a chart"),
            types.ImageContent(type="image", data=data, mime_type="image/png"),
            types.ImageContent(type="image", data=data, mime_type="image/jpeg"),  # the bytes say otherwise
            types.ImageContent(type="image", data=base64.b64encode(b"<svg/>").decode(), mime_type="image/svg+xml"),
        ]
    )
    converted = fenced("charts", "draw", to_tool_result(result))
    assert [(i.media_type, i.data) for i in converted.images] == [("image/png", png)]
    assert f"[image image/png, {len(png)} B, " in converted.content
    assert "[image image/jpeg, about" in converted.content and "[image image/svg+xml, about" in converted.content


def test_a_servers_roots_keep_the_folders_its_arguments_name(tmp_path, monkeypatch):
    # Declaring roots must not take away what the server's own command line granted (issue 39,
    # item 6): by default its roots are [plugins.mcp] roots plus the folders its arguments name.
    from pathlib import Path

    from crab_mcp.settings import arg_folders, check_server, server_roots

    data, other, sub = tmp_path / "data", tmp_path / "other", tmp_path / "cwd" / "sub"
    for folder in (data, other, sub):
        folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    args = [str(data), f"--root={other}", "./cwd/sub", "stdio", str(tmp_path / "missing"), "/etc/hostname"]
    (config,) = server_configs({"servers": {"fs": {"command": "server", "args": args}}})
    assert arg_folders(config) == [data.resolve(), other.resolve(), sub.resolve()]
    shared = [Path("/srv/shared")]
    assert server_roots(config, shared) == [Path("/srv/shared"), data.resolve(), other.resolve(), sub.resolve()]
    assert config.declare_roots

    (own,) = server_configs({"servers": {"fs": {"command": "server", "args": args, "roots": ["~/notes"]}}})
    assert server_roots(own, shared) == [Path("~/notes").expanduser()]  # its own list replaces the default
    (off,) = server_configs({"servers": {"fs": {"command": "server", "args": args, "roots": False}}})
    assert not off.declare_roots
    (remote,) = server_configs({"servers": {"r": {"url": "https://example.invalid/mcp"}}})
    assert server_roots(remote, shared) == shared  # an HTTP server's arguments are not ours to read

    for bad in (True, "/data", [1]):
        with pytest.raises(InvalidValue, match="roots"):
            check_server("fs", {"command": "server", "roots": bad})
