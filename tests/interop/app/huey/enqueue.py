"""Enqueues interop tasks and prints their ids as JSON: python enqueue.py <kind> [args...]."""

import json
import sys

from tasks import add, fail, flaky, sleepy

kind = sys.argv[1]
if kind == "add":
    result = add(int(sys.argv[2]), int(sys.argv[3]))
elif kind == "fail":
    result = fail(sys.argv[2])
elif kind == "flaky":
    result = flaky(sys.argv[2])
elif kind == "sleepy":
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0
    result = sleepy.schedule((float(sys.argv[2]),), delay=delay) if delay else sleepy(float(sys.argv[2]))
else:
    raise SystemExit(f"unknown kind {kind}")
print(json.dumps({"task_id": result.id}))
