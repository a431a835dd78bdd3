"""rq-scheduler with its z4j scheduler adapter (z4j-rqscheduler), for the interop suite.

The scheduler process: it defines two repeating schedules, then runs
rq-scheduler's loop with the z4j agent inside, wrapped in managed native
control (`managed=True`, the adapter's README setup). What it enqueues is run
by an RQ worker with its own agent (worker_settings.py). Settings come from
Z4J_* and INTEROP_BROKER_URL.
"""

import logging
import os
from datetime import UTC, datetime

from redis import Redis
from rq_scheduler import Scheduler
from z4j_bare import install_agent
from z4j_rqscheduler import RqSchedulerAdapter

import jobs

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")

connection = Redis.from_url(os.environ["INTEROP_BROKER_URL"])
# interval: how often rq-scheduler looks for due jobs (its default is 60 s).
scheduler = Scheduler(connection=connection, queue_name="default", interval=1)

# The definitions live in code: replace whatever an earlier run left in Redis.
for job in scheduler.get_jobs():
    scheduler.cancel(job)
now = datetime.now(UTC)
scheduler.schedule(scheduled_time=now, func=jobs.tick, args=["rq-scheduler"], interval=2, repeat=None, id="interop-rq-tick")
scheduler.schedule(scheduled_time=now, func=jobs.add, args=[2, 3], interval=3, repeat=None, id="interop-rq-add")

adapter = RqSchedulerAdapter(scheduler=scheduler, managed=True)
agent = install_agent(engines=[], schedulers=[adapter])
try:
    scheduler.run()
finally:
    agent.stop()
