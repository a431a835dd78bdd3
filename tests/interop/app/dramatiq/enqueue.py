"""Enqueues interop tasks and prints their ids as JSON: python enqueue.py <kind> [args...].

`sleepy <seconds> [delay]` with a delay sends a pipeline: a first `sleepy 0`
whose completion makes the worker enqueue the `sleepy <seconds>` message with
that delay (seconds). The z4j agent runs in the worker, so it reports a
message when a worker process enqueues it (task.received) or starts it; a
message sent only by this script is unseen until it starts. The delayed
second stage is therefore shown `received` while still pending, which is
what a pending-only cancel (dramatiq-abort) can stop.
"""

import json
import sys

import dramatiq

from tasks import add, fail, flaky, sleepy

kind = sys.argv[1]
if kind == "add":
    message = add.send(int(sys.argv[2]), int(sys.argv[3]))
elif kind == "fail":
    message = fail.send(sys.argv[2])
elif kind == "flaky":
    message = flaky.send(sys.argv[2])
elif kind == "sleepy":
    seconds = float(sys.argv[2])
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0
    if delay > 0:
        message = sleepy.message_with_options(args=(seconds,), delay=int(delay * 1000), pipe_ignore=True)
        dramatiq.pipeline([sleepy.message(0), message]).run()
    else:
        message = sleepy.send(seconds)
else:
    raise SystemExit(f"unknown kind {kind}")
print(json.dumps({"task_id": message.message_id}))
