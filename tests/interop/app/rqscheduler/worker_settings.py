"""Settings of the RQ worker that runs what rq-scheduler enqueues: `rq worker -c worker_settings`.

Importing this module starts the worker's own z4j agent (an engine agent,
z4j-rq), which reports the fired jobs. It reads Z4J_* and Z4J_RQ_REDIS_URL.
"""

import os

from z4j_rq import register_worker_bootstrap

REDIS_URL = os.environ["INTEROP_BROKER_URL"]

register_worker_bootstrap()
