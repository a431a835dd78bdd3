"""APScheduler 3 with its z4j scheduler adapter (z4j-apscheduler), for the interop suite.

A BackgroundScheduler with two interval jobs runs them in this process; a
listener logs each run (APScheduler jobs have no task engine, so svc hears of
no task). The z4j agent is bound to the running scheduler, as the adapter's
README sets it up. Settings come from Z4J_*.
"""

import logging
import time

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED
from apscheduler.schedulers.background import BackgroundScheduler
from z4j_apscheduler import APSchedulerAdapter
from z4j_bare import install_agent

import jobs

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
log = logging.getLogger("interop.apscheduler")

scheduler = BackgroundScheduler(timezone="UTC")
scheduler.add_job(jobs.tick, "interval", seconds=2, args=["apscheduler"], id="interop-aps-tick", name="interop tick")
scheduler.add_job(jobs.add, "interval", seconds=3, args=[2, 3], id="interop-aps-add", name="interop add")


def on_run(event):
    if event.exception:
        log.error("interop job %s failed: %r", event.job_id, event.exception)
    else:
        log.info("interop job %s ran: %r", event.job_id, event.retval)


scheduler.add_listener(on_run, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
# The adapter reads the live scheduler: start it first.
scheduler.start()

adapter = APSchedulerAdapter(scheduler=scheduler, tasks={"jobs.tick": jobs.tick, "jobs.add": jobs.add})
agent = install_agent(engines=[], schedulers=[adapter])
try:
    while True:
        time.sleep(1)
finally:
    agent.stop()
    scheduler.shutdown()
