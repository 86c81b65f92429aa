"""Closed by default: tokens, 401/413/422/429, one log line each, nothing stored; refusing to start."""

from __future__ import annotations

import json
import os
import stat

import httpx


def test_token_create_prints_it_once_and_stores_only_its_hash(home):
    token = home.token("laptop")
    assert token.startswith("crab_") and len(token) > 40
    stored = home.path / "http" / "tokens.json"
    assert stat.S_IMODE(os.stat(stored).st_mode) == 0o600
    text = stored.read_text()
    assert token not in text and token[5:] not in text
    assert set(json.loads(text)["tokens"]) == {"laptop"}
    home.token("ci")
    listed = home.crab("http", "token", "list")
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["ci", "laptop"]
    assert token not in listed.stdout
    again = home.crab("http", "token", "create", "laptop")
    assert again.returncode == 2 and "exists" in again.stderr and "Traceback" not in again.stderr
    bad = home.crab("http", "token", "create", "no spaces")
    assert bad.returncode == 2 and "token name" in bad.stderr
    gone = home.crab("http", "token", "revoke", "ci")
    assert gone.returncode == 0 and "revoked" in gone.stdout
    missing = home.crab("http", "token", "revoke", "ci")
    assert missing.returncode == 2 and "no token named 'ci'" in missing.stderr


def test_without_a_token_the_channel_refuses_to_start_with_one_line(home):
    done = home.crab("serve", "http", "-m", "echo/echo")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "crab: http: no API token: create one with `crab http token create NAME` (it is shown once), then start again"
    ]


def test_listening_beyond_loopback_needs_tls_or_the_proxy_flag(home):
    home.token("laptop")
    home.configure('[plugins.http]\nhost = "0.0.0.0"\nport = 0\n')
    done = home.crab("serve", "http", "-m", "echo/echo")
    assert done.returncode == 2, done.stderr
    assert "reachable from other machines: set tls_cert and tls_key, or behind_proxy = true" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_project_cannot_open_the_listener_to_the_network(serve, home):
    """host is trust-only: an untrusted project's config is ignored for it (still 127.0.0.1)."""
    (home.work / ".crab").mkdir()
    (home.work / ".crab" / "config.toml").write_text(
        '[plugins.http]\nhost = "0.0.0.0"\nbehind_proxy = true\nmax_request_bytes = 100000000\n'
    )
    home.configure("[plugins.http]\nport = 0\nmax_request_bytes = 4096\n")
    token = home.token("laptop")
    served = serve()
    try:
        assert served.url.startswith("http://127.0.0.1:")
        # nor loosen a limit on clients: the user's 4 KiB cap holds
        big = httpx.post(
            served.url + "/v1/sessions", headers={"Authorization": f"Bearer {token}"}, content=b" " * 8192, timeout=30
        )
        assert big.status_code == 413
    finally:
        assert served.stop() == 0


def test_refused_requests_get_401_413_422_one_line_each_and_nothing_is_stored(serve, home):
    token = home.token("laptop")
    home.configure("[plugins.http]\nport = 0\nmax_request_bytes = 2048\n")
    served = serve()
    url = served.url
    good = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/v1/sessions").status_code == 401
        wrong = client.post("/v1/sessions", headers={"Authorization": "Bearer crab_" + "x" * 43}, json={})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Bearer")
        assert client.get("/v1/models", headers={"Authorization": f"Basic {token}"}).status_code == 401
        big = client.post("/v1/chat/completions", headers=good, content=b"{" + b" " * 4096 + b"}")
        assert big.status_code == 413
        chunked = client.post("/v1/chat/completions", headers=good, content=iter([b"{", b" " * 4096, b"}"]))
        assert chunked.status_code == 413
        malformed = client.post("/v1/chat/completions", headers=good, content=b"{not json")
        assert malformed.status_code == 422 and "not JSON" in malformed.json()["error"]["message"]
        no_messages = client.post("/v1/chat/completions", headers=good, json={"model": "x", "messages": []})
        assert no_messages.status_code == 422
        assert client.post("/v1/sessions", headers=good, json={"title": 5}).status_code == 422
        assert client.get("/v1/sessions", headers=good).json() == {"sessions": []}
    assert served.stop() == 0
    log = served.log()
    refused = [line for line in log.splitlines() if line.startswith("warning: http: ")]
    assert [line.split()[2] for line in refused] == ["401", "401", "401", "413", "413", "422", "422", "422"]
    assert "from 127.0.0.1: no bearer token" in refused[0]
    assert "an unknown or revoked token" in refused[1]
    assert token not in log and token not in served.stdout
    assert "Traceback" not in log
    assert home.requests() == []  # the model was never called
    assert not (home.path / "http" / "sessions.json").exists()


def test_a_revoked_token_is_refused_at_once_and_the_others_still_work(serve, home):
    laptop, phone = home.token("laptop"), home.token("phone")
    served = serve()
    with httpx.Client(base_url=served.url, timeout=30) as client:
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {laptop}"}).status_code == 200
        assert home.crab("http", "token", "revoke", "laptop").returncode == 0
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {laptop}"}).status_code == 401
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {phone}"}).status_code == 200
    assert served.stop() == 0


def test_each_token_has_its_own_rate_limit(serve, home):
    laptop, phone = home.token("laptop"), home.token("phone")
    # one request a minute: the second is refused however slowly a loaded machine sends it (with 3,
    # a token regained one after 20 s, which a busy CI run once took between two requests)
    home.configure("[plugins.http]\nport = 0\nrate_limit = 1\n")
    served = serve()
    with httpx.Client(base_url=served.url, timeout=30) as client:
        codes = [client.get("/v1/models", headers={"Authorization": f"Bearer {laptop}"}).status_code for _ in range(2)]
        assert codes == [200, 429]
        limited = client.get("/v1/models", headers={"Authorization": f"Bearer {laptop}"})
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {phone}"}).status_code == 200
    assert served.stop() == 0
    assert "token 'laptop' is over its rate limit" in served.log()


def test_cors_is_off_unless_origins_are_listed(serve, home):
    token = home.token("laptop")
    preflight = {
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    served = serve()
    with httpx.Client(base_url=served.url, timeout=30) as client:
        refused = client.options("/v1/sessions", headers=preflight)
        assert "access-control-allow-origin" not in refused.headers
        plain = client.get("/v1/models", headers={"Authorization": f"Bearer {token}", "Origin": "https://app.example"})
        assert "access-control-allow-origin" not in plain.headers
    assert served.stop() == 0
    home.configure('[plugins.http]\nport = 0\ncors_origins = ["https://app.example"]\n')
    served = serve()
    with httpx.Client(base_url=served.url, timeout=30) as client:
        allowed = client.options("/v1/sessions", headers=preflight)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        other = client.options("/v1/sessions", headers={**preflight, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
        rebound = client.options("/v1/sessions", headers={**preflight, "Host": "evil.example"})
        assert rebound.status_code == 400 and "access-control-allow-origin" not in rebound.headers
    assert served.stop() == 0


def test_tls_lets_the_server_listen_beyond_loopback(serve, home, tmp_path):
    import shutil
    import ssl
    import subprocess

    import pytest

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: the TLS test skips")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1"
    subprocess.run(
        ["openssl", *request.split(), "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True
    )
    token = home.token("laptop")
    home.configure(f'[plugins.http]\nhost = "0.0.0.0"\nport = 0\ntls_cert = "{cert}"\ntls_key = "{key}"\n')
    served = serve(listening=r"listening on https://0\.0\.0\.0:(\d+)/")
    url = f"https://127.0.0.1:{served.url}"
    with httpx.Client(base_url=url, timeout=30, verify=ssl.create_default_context(cafile=str(cert))) as client:
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(f"http://127.0.0.1:{served.url}/v1/models", timeout=10)
    assert served.stop() == 0


def test_half_a_tls_pair_is_refused(home):
    home.token("laptop")
    home.configure('[plugins.http]\nport = 0\ntls_cert = "/nowhere/cert.pem"\n')
    done = home.crab("serve", "http", "-m", "echo/echo")
    assert done.returncode == 2 and "tls_cert and tls_key go together" in done.stderr


def test_the_rate_limit_refills_with_time():
    from crab_http.limits import RateLimiter

    now = [0.0]
    limiter = RateLimiter(60, clock=lambda: now[0])
    assert all(limiter.allow("a") for _ in range(60))
    assert not limiter.allow("a") and limiter.retry_after("a") == 1
    assert limiter.allow("b")
    now[0] += 1.0
    assert limiter.allow("a") and not limiter.allow("a")
    now[0] += 3600
    assert sum(limiter.allow("a") for _ in range(100)) == 60


def _served_with_a_token(serve, home):
    """One token, the server running: the token file, its good text, the server, the header."""
    token = home.token("laptop")
    tokens = home.path / "http" / "tokens.json"
    good = tokens.read_text()
    return tokens, good, serve(), {"Authorization": f"Bearer {token}"}


def test_a_token_file_broken_by_hand_refuses_everyone_with_one_line(serve, home):
    tokens, good, served, headers = _served_with_a_token(serve, home)
    with httpx.Client(base_url=served.url, timeout=30) as client:
        assert client.get("/v1/models", headers=headers).status_code == 200
        # An editor that saves in steps: the file is first empty, then broken; one breakage, one line.
        tokens.write_text("")
        assert client.get("/v1/models", headers=headers).status_code == 401
        tokens.write_text("{broken")
        assert client.get("/v1/models", headers=headers).status_code == 401
        assert client.get("/v1/models", headers=headers).status_code == 401
        assert served.log().count("every request is refused until it is fixed") == 1
        tokens.write_text(good + "\n")  # fixed (another size: seen as a change whatever the clock)
        assert client.get("/v1/models", headers=headers).status_code == 200
        tokens.write_text("{broken again")
        assert client.get("/v1/models", headers=headers).status_code == 401
    assert served.stop() == 0
    assert "Traceback" not in served.log()


def test_crab_http_run_is_crab_serve_http(home):
    done = home.crab("http", "run", "-m", "echo/echo")
    assert done.returncode == 2 and "http: no API token" in done.stderr
    shown = home.crab("http", "--help")
    assert shown.returncode == 0 and "token" in shown.stdout and "run" in shown.stdout


def test_an_unreadable_tls_file_is_refused_with_one_line(home, tmp_path):
    home.token("laptop")
    (tmp_path / "key.pem").write_text("not really")
    home.configure(f'[plugins.http]\nport = 0\ntls_cert = "/nowhere/cert.pem"\ntls_key = "{tmp_path / "key.pem"}"\n')
    done = home.crab("serve", "http", "-m", "echo/echo")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "crab: http: tls_cert '/nowhere/cert.pem' is not a readable file: fix the path in [plugins.http]"
    ]


def test_a_token_file_that_is_a_fifo_refuses_everyone_and_blocks_nothing(serve, home):
    import os

    tokens, good, served, headers = _served_with_a_token(serve, home)
    with httpx.Client(base_url=served.url, timeout=30) as client:
        tokens.unlink()
        os.mkfifo(tokens)  # reading it would wait for a writer forever, in the server's loop
        assert client.get("/v1/models", headers=headers).status_code == 401
        tokens.unlink()
        tokens.write_text(good)
        assert client.get("/v1/models", headers=headers).status_code == 200
    assert served.stop() == 0
    assert "not a regular file; fix or remove it; every request is refused" in served.log()


def test_json_nested_too_deeply_is_a_422_not_a_500(shared):
    """json's decoder recurses per level: ``[`` x 100,000 (well under the body cap) raised
    RecursionError, a 500 with the error in the log."""
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        for path in ("/v1/chat/completions", "/v1/sessions"):
            deep = client.post(path, headers=shared.auth(), content=b"[" * 100_000)
            assert deep.status_code == 422, deep.text
            assert "nests too deeply" in deep.json()["error"]["message"]
    shared.served.wait_for_line(r"http: 422 POST /v1/sessions .*nests too deeply")
    assert "RecursionError" not in shared.served.log() and "http: 500" not in shared.served.log()


def test_a_host_header_naming_another_server_is_refused(shared):
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends ``Host: evil.example``."""
    port = shared.url.rsplit(":", 1)[1]
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        for name in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.evil.example"):
            page = client.get("/", headers={"Host": name})
            assert page.status_code == 400 and "allowed_hosts" in page.json()["error"]["message"], name
            api = client.get("/v1/models", headers={**shared.auth(), "Host": name})
            assert api.status_code == 400, name
        for name in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}", "127.0.0.2"):
            assert client.get("/", headers={"Host": name}).status_code == 200, name
            assert client.get("/v1/models", headers={**shared.auth(), "Host": name}).status_code == 200, name
    shared.served.wait_for_line(r'http: 400 GET / from 127\.0\.0\.1: Host "evil\.example" is not this server')


def test_allowed_hosts_adds_names_and_a_proxy_on_every_address_needs_them(serve, home):
    token = home.token("laptop")
    home.configure('[plugins.http]\nport = 0\nallowed_hosts = ["crab.example"]\n')
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        assert client.get("/v1/models", headers={**auth, "Host": "crab.example"}).status_code == 200
        assert client.get("/v1/models", headers={**auth, "Host": "Crab.Example.:443"}).status_code == 200
        assert client.get("/v1/models", headers=auth).status_code == 200  # its own address still
        assert client.get("/v1/models", headers={**auth, "Host": "evil.example"}).status_code == 400
    assert served.stop() == 0
    home.configure('[plugins.http]\nhost = "0.0.0.0"\nport = 0\nbehind_proxy = true\n')
    done = home.crab("serve", "http", "-m", "echo/echo")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "crab: http: host '0.0.0.0' behind a proxy answers only the names in allowed_hosts: set allowed_hosts "
        'to the name(s) the proxy serves (or ["*"]) in [plugins.http] of your user config'
    ]


def test_which_host_names_each_listener_answers():
    from crab_http.hosts import HostCheck, host_name
    from crab_http.settings import HttpSettings

    assert [host_name(h) for h in ("[::1]:80", "Localhost.", "a.example:8765", "::1")] == [
        "::1",
        "localhost",
        "a.example",
        "::1",
    ]
    loopback = HostCheck(HttpSettings())
    assert loopback.allowed(None)  # HTTP/1.0 without Host: not a browser page
    assert loopback.allowed("localhost") and loopback.allowed("127.0.0.1:1") and not loopback.allowed("evil.example")
    tls = HostCheck(HttpSettings(host="0.0.0.0", tls_cert="c", tls_key="k"))
    assert tls.allowed("crab.example")  # the certificate binds the name
    named = HostCheck(HttpSettings(host="0.0.0.0", tls_cert="c", tls_key="k", allowed_hosts=("crab.example",)))
    assert named.allowed("crab.example:443") and not named.allowed("evil.example") and not named.allowed("localhost")
    lan = HostCheck(HttpSettings(host="192.168.1.5", behind_proxy=True))
    assert lan.allowed("192.168.1.5:8765") and not lan.allowed("evil.example")
    assert HostCheck(HttpSettings(behind_proxy=True, allowed_hosts=("*",))).allowed("anything.example")
