"""RQ worker settings for the interop suite: `rq worker -c settings`.

`rq worker` imports this module before it builds the worker, which makes it
the place to start the z4j agent: register_worker_bootstrap() wraps RQ's
Worker.execute_job (task events) and starts the agent in a thread of the
worker's main process, with the Z4J_* settings from the environment. The
agent's own Redis connection comes from Z4J_RQ_REDIS_URL.
"""

import logging
import os

from z4j_rq import register_worker_bootstrap

REDIS_URL = os.environ["INTEROP_BROKER_URL"]
QUEUES = ["default"]

# The agent logs through the logging module (`rq worker` sets up only its own
# `rq.worker` logger): at INFO it logs "z4j agent connected: session=...".
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per long-poll request otherwise

os.environ.setdefault("Z4J_RQ_REDIS_URL", REDIS_URL)
register_worker_bootstrap()
