"""The network seatbelt, attacked the way a hostile page or model would: private targets directly,
through redirects and through DNS, odd URL spellings, and DNS rebinding (over http and https)."""

from __future__ import annotations

import asyncio
import http.server
import ipaddress
import shutil
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from crab import ConfigError
from crab._contracts.tools import ToolResult
from crab_tools_web import seatbelt
from crab_tools_web.fetch import fetch
from crab_tools_web.seatbelt import AllowList, Refused, blocked_reason, check_target, check_url, parse_allow_hosts
from crab_tools_web.settings import load_settings

if TYPE_CHECKING:
    from conftest import WebServer

Call = Callable[..., ToolResult]


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """Replace the module's resolver: ``answers[name]`` is a list of answers, one per lookup."""
    answers: dict[str, list[list[str]]] = {}
    lookups: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        lookups.append(host)
        queue = answers.get(host)
        if not queue:
            raise OSError(f"no such host {host}")
        return queue.pop(0) if len(queue) > 1 else queue[0]

    monkeypatch.setattr(seatbelt, "resolve", resolve)
    answers["__lookups__"] = [lookups]
    return answers


def lookups(dns: dict[str, list[list[str]]]) -> list[str]:
    return dns["__lookups__"][0]


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.100.100.200", "metadata"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("255.255.255.255", ""),
        ("fd00:ec2::254", "metadata"),
        ("fd12:3456::1", "unique local"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "IPv4-mapped IPv6 address of 127.0.0.1, a loopback"),
        ("::ffff:169.254.169.254", "of 169.254.169.254, a cloud metadata"),
        ("2002:7f00:1::", "embeds 127.0.0.1"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "embeds 127.0.0.1"),  # Teredo, client 127.0.0.1
        ("::7f00:1", "reserved"),
        ("64:ff9b::a00:1", "embeds 10.0.0.1"),
        ("198.18.0.1", "benchmarking"),
    ],
)
def test_non_public_addresses_are_blocked(address: str, why: str) -> None:
    reason = blocked_reason(ipaddress.ip_address(address))
    assert reason is not None and why in reason


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "1.1.1.1", "::ffff:8.8.8.8", "64:ff9b::808:808"]
)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/", "not an http or https"),
        ("file:///etc/passwd", "not an http or https"),
        ("gopher://127.0.0.1:6379/_FLUSHALL", "not an http or https"),
        ("http://user:pw@example.com/", "user name or password"),
        ("http://example.com@127.0.0.1/", "user name or password"),
        ("http://2130706433/", "unusual form"),
        ("http://0x7f000001/", "unusual form"),
        ("http://0x7f.0.0.1/", "unusual form"),
        ("http://0177.0.0.1/", "unusual form|not a valid URL"),
        ("http://127.1/", "unusual form"),
        ("http://10.0.0.1.5/", "unusual form"),
        ("http://[fe80::1%25eth0]/", "zone id"),
        ("http://exa mple.com/", "spaces"),
        ("http://evil.com\\@127.0.0.1/", "backslashes"),
        ("/relative/path", "not an http or https"),
        ("http://127.0.0.1:65536/", "port 65536; a port is a number from 1 to 65535"),
        ("http://example.com:0/", "port 0"),
        ("http://example.com:99999999999999999999/", "port 99999999999999999999"),
    ],
)
def test_odd_url_forms_are_refused(url: str, why: str) -> None:
    with pytest.raises(Refused, match=why):
        check_url(url)


def test_ordinary_urls_parse() -> None:
    assert check_url("https://Example.com/a?b=1").host == "example.com"
    assert check_url("http://93.184.216.34:8080/").port == 8080
    assert check_url("https://例え.jp/").raw_host == b"xn--r8jz45g.jp"


def test_loopback_is_refused_when_not_allowed(web: WebServer, call: Call, settings: dict[str, Any]) -> None:
    settings["allow_hosts"] = []
    before = len(web.seen)
    result = call("web_fetch", url=web.url("/page.html"))
    assert result.is_error
    assert "127.0.0.1 is a loopback address" in result.content and "allow_hosts" in result.content
    assert len(web.seen) == before  # refused before connecting


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://192.168.0.1/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:192.168.0.1]/",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://0.0.0.0/",
        "http://127.0.0.1:65536/",  # loopback is allowed here: a port out of range must not reach a socket
    ],
)
def test_private_targets_are_refused_directly(call: Call, url: str, fake_dns: dict[str, list[list[str]]]) -> None:
    result = call("web_fetch", url=url)
    assert result.is_error and result.content.startswith("Refused:"), result.content
    assert "metadata.google.internal" not in lookups(fake_dns)  # refused by name, before any lookup


def test_a_name_resolving_to_a_private_address_is_refused(call: Call, fake_dns: dict[str, list[list[str]]]) -> None:
    fake_dns["intranet.example.com"] = [["10.20.30.40"]]
    result = call("web_fetch", url="http://intranet.example.com/")
    assert result.is_error
    assert "resolves to 10.20.30.40, which is a private address" in result.content


def test_every_address_of_a_name_must_be_public(call: Call, fake_dns: dict[str, list[list[str]]]) -> None:
    fake_dns["mixed.example.com"] = [["93.184.216.34", "10.0.0.1"]]
    result = call("web_fetch", url="http://mixed.example.com/")
    assert result.is_error and "resolves to 10.0.0.1" in result.content


def test_redirect_to_a_private_address_is_refused(web: WebServer, call: Call) -> None:
    before = len(web.seen)
    result = call("web_fetch", url=web.url("/to-private"))
    assert result.is_error
    assert "10.0.0.1 is a private address" in result.content
    assert len(web.seen) == before + 1  # only the first hop reached a server


def test_redirect_to_metadata_is_refused(web: WebServer, call: Call) -> None:
    result = call("web_fetch", url=web.url("/to-metadata"))
    assert result.is_error and "cloud metadata" in result.content


def test_redirect_to_a_name_that_resolves_privately_is_refused(
    web: WebServer, call: Call, fake_dns: dict[str, list[list[str]]]
) -> None:
    fake_dns["inside.test"] = [["192.168.7.7"]]
    result = call("web_fetch", url=web.url("/to-name"))
    assert result.is_error and "inside.test resolves to 192.168.7.7" in result.content


def test_an_ipv4_mapped_address_is_the_ipv4_address(web: WebServer, call: Call) -> None:
    # settings allow 127.0.0.1 only: its IPv4-mapped spelling is the same address, and reaches the
    # server on 127.0.0.1 (connecting to the checked IPv4 address); a mapped private one does not
    result = call("web_fetch", url=f"http://[::ffff:127.0.0.1]:{web.port}/plain.txt")
    assert not result.is_error and "just some plain text" in result.content, result.content
    result = call("web_fetch", url=f"http://[::ffff:10.0.0.1]:{web.port}/page.html")
    assert result.is_error
    assert "is an IPv4-mapped IPv6 address of 10.0.0.1, a private address" in result.content


MAPPED_METADATA = "::ffff:169.254.169.254"
TEREDO_LOOPBACK = "2001:0:4136:e378:8000:63bf:80ff:fffe"  # a Teredo client at 127.0.0.1


@pytest.mark.parametrize(
    "url",
    [
        f"http://[{MAPPED_METADATA}]/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.6]/",
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:a9fe:a9fe::]/",  # 6to4
        f"http://[{TEREDO_LOOPBACK}]/",
        "http://[64:ff9b:1::a9fe:a9fe]/",  # local-use NAT64: where the IPv4 address sits is unknown
        "http://[::a9fe:a9fe]/",  # IPv4-compatible (deprecated)
    ],
)
@pytest.mark.parametrize("entry", ["::/0", "::/1"])
def test_an_ipv6_allow_entry_does_not_unlock_ipv4_inside(url: str, entry: str) -> None:
    # every one of these is an IPv4 address in IPv6 clothes: an IPv6 network in allow_hosts must
    # not open the loopback, private or metadata address inside
    with pytest.raises(Refused, match="web_fetch reaches only public addresses"):
        asyncio.run(check_target(check_url(url), parse_allow_hosts([entry])))


@pytest.mark.parametrize(
    "url", [f"http://[{MAPPED_METADATA}]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[2002:a9fe:a9fe::]/"]
)
def test_an_ipv4_network_does_not_unlock_metadata_in_ipv6_clothes(url: str) -> None:
    with pytest.raises(Refused, match="cloud metadata"):
        asyncio.run(check_target(check_url(url), parse_allow_hosts(["0.0.0.0/0", "169.254.0.0/16"])))
    # naming the metadata address itself is the user's word, in whatever form it is reached
    target = asyncio.run(check_target(check_url(url), parse_allow_hosts(["169.254.169.254"])))
    assert target.addresses


def test_an_allowed_name_resolving_to_mapped_metadata_is_refused(fake_dns: dict[str, list[list[str]]]) -> None:
    fake_dns["wiki.corp"] = [[MAPPED_METADATA]]
    fake_dns["app.dev.corp"] = [["64:ff9b::a9fe:a9fe"]]
    allow = parse_allow_hosts(["wiki.corp", "*.dev.corp"])
    for url in ("http://wiki.corp/", "http://app.dev.corp/"):
        with pytest.raises(Refused, match=r"(embeds|of) 169\.254\.169\.254, a cloud metadata"):
            asyncio.run(check_target(check_url(url), allow))


def test_a_mapped_dns_answer_connects_to_the_ipv4_address(fake_dns: dict[str, list[list[str]]]) -> None:
    fake_dns["dual.corp"] = [["::ffff:10.0.0.5", "10.0.0.5"]]
    target = asyncio.run(check_target(check_url("http://dual.corp/"), parse_allow_hosts(["10.0.0.0/8"])))
    assert target.addresses == (ipaddress.ip_address("10.0.0.5"),)


def test_a_network_in_allow_hosts_does_not_unlock_metadata() -> None:
    allow = parse_allow_hosts(["169.254.0.0/16"])
    assert allow.allows_address(ipaddress.ip_address("169.254.1.1"))
    assert not allow.allows_address(ipaddress.ip_address("169.254.169.254"))
    assert parse_allow_hosts(["169.254.169.254"]).allows_address(ipaddress.ip_address("169.254.169.254"))


def test_allow_hosts_by_name_and_wildcard(fake_dns: dict[str, list[list[str]]]) -> None:
    fake_dns["wiki.corp"] = [["10.0.0.5"]]
    fake_dns["a.dev.corp"] = [["10.0.0.6"]]
    allow = parse_allow_hosts(["wiki.corp", "*.dev.corp"])
    for url in ("http://wiki.corp/", "http://a.dev.corp/"):
        target = asyncio.run(check_target(check_url(url), allow))
        assert str(target.address).startswith("10.0.0.")
    with pytest.raises(Refused):
        asyncio.run(check_target(check_url("http://dev.corp.evil.com/"), allow))


@pytest.mark.parametrize("entry", ["not a host", "http://x.com/", "2130706433", "a..b"])
def test_bad_allow_hosts_entry_is_a_config_error(entry: str) -> None:
    with pytest.raises(ConfigError, match="allow_hosts"):
        load_settings({"allow_hosts": [entry]})


@pytest.mark.parametrize("entry", ["::ffff:0:0/96", "::ffff:10.0.0.6", "64:ff9b::/96", "2002::/16", "2001::/32"])
def test_an_allow_entry_of_ipv6_forms_of_ipv4_says_to_name_the_ipv4(entry: str) -> None:
    # these are checked as the IPv4 address inside, so such an entry would open nothing: say so
    with pytest.raises(ConfigError, match="name that IPv4 address or network instead"):
        load_settings({"allow_hosts": [entry]})
    assert load_settings({"allow_hosts": ["::1", "::/0", "fd00::/8"]}).allow.networks


def test_allow_hosts_is_trust_only() -> None:
    from crab_tools_web.settings import TABLE

    trust_only = {s.name for s in TABLE.settings if s.trust_only}
    assert {"allow_hosts", "searxng_url", "brave_api_key_env", "brave_url"} <= trust_only


def test_environment_proxy_is_not_used(web: WebServer, call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    # a proxy would resolve the host itself and undo the check; this one does not even exist
    monkeypatch.setenv("HTTP_PROXY", "http://10.255.255.1:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.255.255.1:3128")
    result = call("web_fetch", url=web.url("/plain.txt"))
    assert not result.is_error, result.content


# --- DNS rebinding: the connection goes to the address that was checked -------------------------


def test_connection_goes_to_the_checked_address(
    web: WebServer, call: Call, settings: dict[str, Any], fake_dns: dict[str, list[list[str]]]
) -> None:
    # First answer 127.0.0.1 (allowed), then a private address: a fetcher that resolves again to
    # connect would go to 10.9.9.9 (unreachable here); the pinned connection reaches our server.
    fake_dns["rebind.test"] = [["127.0.0.1"], ["10.9.9.9"]]
    result = call("web_fetch", url=f"http://rebind.test:{web.port}/host")
    assert not result.is_error, result.content
    assert f"host=rebind.test:{web.port}" in result.content  # Host header keeps the name
    assert lookups(fake_dns).count("rebind.test") == 1


def test_an_unreachable_checked_address_falls_back_to_the_next(
    web: WebServer, call: Call, settings: dict[str, Any], fake_dns: dict[str, list[list[str]]]
) -> None:
    import socket

    with socket.socket(socket.AF_INET6) as sock:  # a port on ::1 that nothing listens on
        try:
            sock.bind(("::1", web.port))
        except OSError:
            pytest.skip("no IPv6 loopback here: cannot test the fall-back from ::1 to 127.0.0.1")
    settings["allow_hosts"] = ["127.0.0.1", "::1"]
    fake_dns["dual.test"] = [["::1", "127.0.0.1"]]
    result = call("web_fetch", url=f"http://dual.test:{web.port}/host")
    assert not result.is_error, result.content
    assert f"host=dual.test:{web.port}" in result.content
    assert lookups(fake_dns) == ["dual.test"]


def test_each_redirect_hop_is_resolved_and_checked(
    web: WebServer, call: Call, fake_dns: dict[str, list[list[str]]], settings: dict[str, Any]
) -> None:
    settings["allow_hosts"] = ["127.0.0.1", "inside.test"]
    fake_dns["inside.test"] = [["127.0.0.1"]]
    result = call("web_fetch", url=web.url("/to-name"))
    assert not result.is_error, result.content
    assert lookups(fake_dns) == ["inside.test"]
    assert web.seen[-1].host == f"inside.test:{web.port}"


def _openssl(tmp: Path, name: str) -> tuple[Path, Path]:
    key, cert = tmp / f"{name}.key", tmp / f"{name}.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}",
            "-addext", f"subjectAltName=DNS:{name}", "-addext", "basicConstraints=critical,CA:TRUE",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return key, cert


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, Path, list[str]]]:
    """An https server on 127.0.0.1 with a certificate for ``site.test``; yields port, CA, SNI names seen."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make a test certificate (apt-get install openssl)")
    key, cert = _openssl(tmp_path, "site.test")
    names: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            body = f"tls host={self.headers.get('Host')}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: names.append(name or "") and None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], cert, names
    httpd.shutdown()
    httpd.server_close()


def _fetch_tls(url: str, ca: Path, allow: AllowList) -> Any:
    client_context = ssl.create_default_context(cafile=str(ca))
    return asyncio.run(
        fetch(
            url,
            allow=allow,
            max_bytes=10_000,
            max_redirects=0,
            connect_timeout=5,
            read_timeout=5,
            total_timeout=20,
            verify=client_context,
        )
    )


def test_https_connects_to_the_checked_address_and_verifies_the_name(
    tls_server: tuple[int, Path, list[str]], fake_dns: dict[str, list[list[str]]]
) -> None:
    port, ca, names = tls_server
    fake_dns["site.test"] = [["127.0.0.1"], ["10.9.9.9"]]
    fetched = _fetch_tls(f"https://site.test:{port}/x", ca, parse_allow_hosts(["127.0.0.1"]))
    assert fetched.body == f"tls host=site.test:{port}".encode()
    assert names == ["site.test"]  # SNI carried the name, not the address
    assert lookups(fake_dns) == ["site.test"]


def test_https_certificate_must_match_the_original_name(
    tls_server: tuple[int, Path, list[str]], fake_dns: dict[str, list[list[str]]]
) -> None:
    from crab_tools_web.fetch import FetchError

    port, ca, _ = tls_server
    fake_dns["other.test"] = [["127.0.0.1"]]
    with pytest.raises(FetchError, match="cannot fetch"):
        _fetch_tls(f"https://other.test:{port}/x", ca, parse_allow_hosts(["127.0.0.1"]))
