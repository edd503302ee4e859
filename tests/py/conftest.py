"""What every test here shares: the async tests run on asyncio (the MCP
Python SDK's own loop), through anyio's pytest plugin."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
