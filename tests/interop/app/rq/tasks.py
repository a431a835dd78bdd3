"""RQ tasks for the interop suite: plain functions, enqueued by import path.

RQ names a job by its function's import path, so svc shows these as
``tasks.add``, ``tasks.fail``, ``tasks.flaky`` and ``tasks.sleepy``.
"""

import time

from rq import get_current_job


def add(x, y):
    return x + y


def fail(reason):
    raise ValueError(f"interop failure: {reason}")


def flaky(marker):
    # Enqueued with retry=Retry(max=1): RQ's own retry re-runs the same job
    # once. The first attempt (one retry left) fails, the retry succeeds.
    job = get_current_job()
    if job is not None and job.retries_left:
        raise RuntimeError(f"first attempt of {marker}")
    return f"recovered {marker}"


def sleepy(seconds):
    time.sleep(seconds)
    return seconds
