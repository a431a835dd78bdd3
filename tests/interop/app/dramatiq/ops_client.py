"""What the operator-action cells ask of Dramatiq and its Redis broker, printed as JSON on the last line.

python ops_client.py fail <n> <marker>  -> {"task_ids": [...]}  n failing messages (dead-lettered: no retries)
python ops_client.py park <n>           -> {"task_ids": [...]}  n messages sent to interop_parked
python ops_client.py llen <queue>       -> {"value": n}         messages waiting in the queue
"""

import json
import sys

from tasks import broker, fail, parked

cmd = sys.argv[1]
if cmd == "fail":
    print(json.dumps({"task_ids": [fail.send(f"{sys.argv[3]}-{i}").message_id for i in range(int(sys.argv[2]))]}))
elif cmd == "park":
    print(json.dumps({"task_ids": [parked.send(i, i).message_id for i in range(int(sys.argv[2]))]}))
elif cmd == "llen":
    # The Redis broker keeps a queue's message ids in the list dramatiq:<queue>.
    print(json.dumps({"value": broker.client.llen(f"dramatiq:{sys.argv[2]}")}))
else:
    raise SystemExit(f"unknown command {cmd}")
