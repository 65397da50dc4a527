"""The process's Redis client for commands (asyncio): one per event loop, since a connection pool belongs
to the loop that opened it. Blocking: past `REDIS_CONNECTIONS` a command waits for a free connection
instead of failing. (Subscriptions keep connections of their own: see `chat.services.leases`.)"""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
from django.conf import settings

REDIS_CONNECTIONS = 200  # per process and event loop; Redis takes thousands

_clients: dict[asyncio.AbstractEventLoop, aioredis.Redis] = {}


def redis_client() -> aioredis.Redis:
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        for closed in [known for known in _clients if known.is_closed()]:
            del _clients[closed]
        pool = aioredis.BlockingConnectionPool.from_url(
            settings.REDIS_URL,
            max_connections=REDIS_CONNECTIONS,
            timeout=30,
            socket_connect_timeout=2,
            socket_timeout=5,
        )
        client = _clients[loop] = aioredis.Redis(connection_pool=pool)
    return client
