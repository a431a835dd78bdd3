"""Enqueues interop tasks and prints their ids as JSON: python enqueue.py <kind> [args...]."""

import json
import sys

from tasks import add, fail, flaky, sleepy

kind = sys.argv[1]
if kind == "add":
    result = add.delay(int(sys.argv[2]), int(sys.argv[3]))
elif kind == "fail":
    result = fail.delay(sys.argv[2])
elif kind == "flaky":
    result = flaky.delay(sys.argv[2])
elif kind == "sleepy":
    result = sleepy.apply_async(args=[float(sys.argv[2])], countdown=float(sys.argv[3]) if len(sys.argv) > 3 else 0)
else:
    raise SystemExit(f"unknown kind {kind}")
print(json.dumps({"task_id": result.id}))
