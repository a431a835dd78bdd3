"""Huey tasks for the interop suite: a real consumer with the real z4j agent.

This module only defines the Huey instance and its tasks, so producers
(enqueue.py here, a web app in real life) import it without starting an
agent; worker.py starts the consumer with the agent.
"""

import os
import time

from huey import RedisHuey

huey = RedisHuey("interop", url=os.environ["INTEROP_BROKER_URL"])


@huey.task()
def add(x, y):
    return x + y


@huey.task()
def fail(reason):
    raise ValueError(f"interop failure: {reason}")


@huey.task(retries=1, context=True)
def flaky(marker, task=None):
    # Huey counts retries down: the first attempt has 1 left and fails, so
    # Huey re-enqueues it; the second (0 left) succeeds.
    if task.retries > 0:
        raise RuntimeError(f"first attempt of {marker}")
    return f"recovered {marker}"


@huey.task()
def sleepy(seconds):
    time.sleep(seconds)
    return seconds
