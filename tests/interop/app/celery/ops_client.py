"""What the operator-action cells ask of Celery and its broker, printed as JSON on the last line.

python ops_client.py fail <n> <marker>      -> {"task_ids": [...]}  n failing tasks
python ops_client.py park <n>               -> {"task_ids": [...]}  n tasks sent to interop.parked
python ops_client.py llen <queue>           -> {"value": n}         messages waiting in the broker
python ops_client.py inspect <what> <worker> -> {"value": ...}      celery inspect (stats, active_queues, registered)
"""

import json
import sys

from ops import add, app, fail

cmd = sys.argv[1]
if cmd == "fail":
    ids = [fail.delay(f"{sys.argv[3]}-{i}").id for i in range(int(sys.argv[2]))]
    print(json.dumps({"task_ids": ids}))
elif cmd == "park":
    ids = [add.apply_async(args=[i, i], queue="interop.parked").id for i in range(int(sys.argv[2]))]
    print(json.dumps({"task_ids": ids}))
elif cmd == "llen":
    with app.connection_for_read() as conn:
        print(json.dumps({"value": conn.default_channel.client.llen(sys.argv[2])}))
elif cmd == "inspect":
    what, worker = sys.argv[2], sys.argv[3]
    inspector = app.control.inspect(destination=[worker], timeout=5)
    reply = inspector.registered("rate_limit") if what == "registered" else getattr(inspector, what)()
    print(json.dumps({"value": (reply or {}).get(worker)}, default=str))
else:
    raise SystemExit(f"unknown command {cmd}")
