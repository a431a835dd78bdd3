"""Enqueues interop jobs and prints their ids as JSON: python enqueue.py <kind> [args...]."""

import asyncio
import json
import sys

from arq import create_pool

from tasks import REDIS_SETTINGS


async def main(kind, args):
    redis = await create_pool(REDIS_SETTINGS)
    try:
        if kind == "add":
            job = await redis.enqueue_job("add", int(args[0]), int(args[1]))
        elif kind in ("fail", "flaky"):
            job = await redis.enqueue_job(kind, args[0])
        elif kind == "sleepy":
            defer = float(args[1]) if len(args) > 1 else None
            job = await redis.enqueue_job("sleepy", float(args[0]), _defer_by=defer)
        else:
            raise SystemExit(f"unknown kind {kind}")
    finally:
        await redis.aclose()
    print(json.dumps({"task_id": job.job_id}))


asyncio.run(main(sys.argv[1], sys.argv[2:]))
