"""Enqueues interop tasks and prints their ids as JSON: python enqueue.py <kind> [args...].

sleepy takes its seconds only: a countdown would need RQ's scheduler in the worker.
"""

import json
import os
import sys

from redis import Redis
from rq import Queue, Retry

from tasks import add, fail, flaky, sleepy

queue = Queue("default", connection=Redis.from_url(os.environ["INTEROP_BROKER_URL"]))
kind = sys.argv[1]
if kind == "add":
    job = queue.enqueue(add, int(sys.argv[2]), int(sys.argv[3]))
elif kind == "fail":
    job = queue.enqueue(fail, sys.argv[2])
elif kind == "flaky":
    # RQ's own retry: the failed first attempt is re-enqueued under the same job id.
    job = queue.enqueue(flaky, sys.argv[2], retry=Retry(max=1))
elif kind == "sleepy":
    job = queue.enqueue(sleepy, float(sys.argv[2]))
else:
    raise SystemExit(f"unknown kind {kind}")
print(json.dumps({"task_id": job.id}))
