"""Enqueues interop tasks and prints their ids as JSON: python enqueue.py <kind> [args...]."""

import asyncio
import json
import sys

from tasks import add, broker, fail, flaky, sleepy


async def main(kind: str, args: list[str]) -> str:
    await broker.startup()
    try:
        if kind == "add":
            sent = await add.kiq(int(args[0]), int(args[1]))
        elif kind == "fail":
            sent = await fail.kiq(args[0])
        elif kind == "flaky":
            sent = await flaky.kiq(args[0])
        elif kind == "sleepy":
            # TaskIQ has no countdown without a schedule source: no delay argument.
            if len(args) > 1:
                raise SystemExit("sleepy takes no delay with TaskIQ")
            sent = await sleepy.kiq(float(args[0]))
        else:
            raise SystemExit(f"unknown kind {kind}")
        return sent.task_id
    finally:
        await broker.shutdown()


print(json.dumps({"task_id": asyncio.run(main(sys.argv[1], sys.argv[2:]))}))
