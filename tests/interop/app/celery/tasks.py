"""Celery tasks for the interop suite: a real worker with the real z4j agent.

Importing z4j_celery registers its worker bootstrap: when this module is
loaded by `celery -A tasks worker`, the z4j agent starts inside the worker
and connects to svc with the Z4J_* settings from the environment.
"""

import os
import time

import z4j_celery  # noqa: F401  (registers the agent bootstrap on worker_ready)
from celery import Celery

broker = os.environ["INTEROP_BROKER_URL"]
app = Celery("interop", broker=broker, backend=broker)
# result_extended keeps task names and arguments in the result backend, which
# z4j-celery needs to retry a task by reference.
app.conf.update(result_extended=True, task_acks_late=False, broker_connection_retry_on_startup=True)


@app.task(name="interop.add")
def add(x, y):
    return x + y


@app.task(name="interop.fail")
def fail(reason):
    raise ValueError(f"interop failure: {reason}")


@app.task(name="interop.flaky", bind=True, max_retries=3, default_retry_delay=1)
def flaky(self, marker):
    # Fails on the first attempt, succeeds on the retry.
    if self.request.retries == 0:
        raise self.retry(exc=RuntimeError(f"first attempt of {marker}"))
    return f"recovered {marker}"


@app.task(name="interop.sleepy")
def sleepy(seconds):
    time.sleep(seconds)
    return seconds
