"""What the operator-action cells ask of RQ and its Redis, printed as JSON on the last line.

python ops_client.py fail <n> <marker>  -> {"task_ids": [...]}  n failing jobs on `default`
python ops_client.py park <n>           -> {"task_ids": [...]}  n jobs on interop.parked (no worker consumes it)
python ops_client.py llen <queue>       -> {"value": n}         jobs waiting in the queue
python ops_client.py ended <id>...      -> {"value": {id: ...}} each job's ended_at as RQ stored it
"""

import json
import os
import sys

from redis import Redis
from rq import Queue

from tasks import add, fail

redis = Redis.from_url(os.environ["INTEROP_BROKER_URL"])
cmd = sys.argv[1]
if cmd == "fail":
    queue = Queue("default", connection=redis)
    print(json.dumps({"task_ids": [queue.enqueue(fail, f"{sys.argv[3]}-{i}").id for i in range(int(sys.argv[2]))]}))
elif cmd == "park":
    queue = Queue("interop.parked", connection=redis)
    print(json.dumps({"task_ids": [queue.enqueue(add, i, i).id for i in range(int(sys.argv[2]))]}))
elif cmd == "llen":
    print(json.dumps({"value": Queue(sys.argv[2], connection=redis).count}))
elif cmd == "ended":
    # The plain-text field of the job's hash (its pickled payload is not read).
    ended = {job_id: (redis.hget(f"rq:job:{job_id}", "ended_at") or b"").decode() for job_id in sys.argv[2:]}
    print(json.dumps({"value": ended}))
else:
    raise SystemExit(f"unknown command {cmd}")
