"""arq job functions for the interop suite, and the Redis settings they share.

This module only defines the jobs, so producers (enqueue.py here, a web app
in real life) import it without starting an agent; worker.py holds the
WorkerSettings that start the z4j agent inside the arq worker.
"""

import asyncio
import os

from arq import Retry
from arq.connections import RedisSettings

# A URL with a database number, e.g. redis://127.0.0.1:6379/3.
REDIS_SETTINGS = RedisSettings.from_dsn(os.environ["INTEROP_BROKER_URL"])


async def add(ctx, x, y):
    return x + y


async def fail(ctx, reason):
    raise ValueError(f"interop failure: {reason}")


async def flaky(ctx, marker):
    # arq counts tries from 1: the first raises arq's own Retry, which
    # re-queues the job (after 0.2 s); the second succeeds.
    if ctx["job_try"] == 1:
        raise Retry(defer=0.2)
    return f"recovered {marker}"


async def sleepy(ctx, seconds):
    await asyncio.sleep(seconds)
    return seconds


FUNCTIONS = [add, fail, flaky, sleepy]
