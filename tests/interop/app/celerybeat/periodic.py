"""Celery beat with its z4j scheduler adapter (z4j-celerybeat), for the interop suite.

Two processes load this module:

- `celery -A periodic beat`: Celery beat sends the entries of `beat_schedule`.
  When beat starts (`beat_init`), the z4j agent starts inside it with the
  celery-beat scheduler adapter, which reads the same static schedule.
- `celery -A periodic worker`: runs what beat sends. Importing z4j_celery
  registers the worker's own agent (an engine agent, as in app/celery), which
  reports the fired tasks.

Both read the Z4J_* settings from the environment (one agent each).
"""

import logging
import os

import z4j_celery  # noqa: F401  (the worker's agent bootstrap; inert in beat)
from celery import Celery, signals

broker = os.environ["INTEROP_BROKER_URL"]
app = Celery("interop-beat", broker=broker, backend=broker)
app.conf.update(
    broker_connection_retry_on_startup=True,
    timezone="UTC",
    # Every few seconds, so fires happen while the test watches.
    beat_schedule={
        "interop-beat-tick": {"task": "interop.beat.tick", "schedule": 2.0, "args": ("beat",)},
        "interop-beat-add": {"task": "interop.beat.add", "schedule": 3.0, "args": (2, 3)},
        # Due only once an hour: what runs of it svc sees come from "trigger now".
        "interop-beat-hourly": {"task": "interop.beat.hourly", "schedule": 3600.0},
    },
)


@app.task(name="interop.beat.tick")
def tick(source):
    return f"tick from {source}"


@app.task(name="interop.beat.add")
def add(x, y):
    return x + y


@app.task(name="interop.beat.hourly")
def hourly():
    return "hourly"


_agent = None


@signals.beat_init.connect
def start_z4j_agent(sender=None, **_):
    """Starts the scheduler agent in the beat process (static beat_schedule source)."""
    global _agent
    from z4j_bare import install_agent
    from z4j_celerybeat import CeleryBeatSchedulerAdapter

    logging.getLogger("z4j").setLevel(logging.INFO)
    _agent = install_agent(engines=[], schedulers=[CeleryBeatSchedulerAdapter(celery_app=app)])
