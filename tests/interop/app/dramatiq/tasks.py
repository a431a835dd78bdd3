"""Dramatiq actors for the interop suite: a real worker with the real z4j agent.

Run the worker with `dramatiq tasks --processes 1`. The Z4JAgent middleware
below starts the z4j agent once the worker process has booted
(z4j_bare.install_agent with the Dramatiq adapter, which adds its event
middleware to this broker); it connects to svc with the Z4J_* settings from
the environment. Importing this module elsewhere (enqueue.py, a web app) only
declares the broker and the actors: no agent starts there.

Each worker process runs its own agent (the events are captured in the
process that runs the actor), so a worker of several processes needs one
agent identity per process: keep one process and scale with --threads.
"""

import os
import time

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import CurrentMessage, Middleware
from dramatiq_abort import Abortable
from dramatiq_abort.backends import RedisBackend

broker = RedisBroker(url=os.environ["INTEROP_BROKER_URL"])
# Lets flaky read its own retry count.
broker.add_middleware(CurrentMessage())
# dramatiq-abort: with it the adapter advertises cancel_task (pending messages only).
broker.add_middleware(Abortable(backend=RedisBackend(client=broker.client)))


class Z4JAgent(Middleware):
    """Starts the z4j agent in each worker process (never in producers)."""

    runtime = None

    def after_process_boot(self, broker):
        from z4j_bare import install_agent
        from z4j_dramatiq import DramatiqEngineAdapter

        self.runtime = install_agent(engines=[DramatiqEngineAdapter(broker=broker)])

    def after_worker_shutdown(self, broker, worker):
        if self.runtime is not None:
            self.runtime.stop(timeout=5.0)


broker.add_middleware(Z4JAgent())
dramatiq.set_broker(broker)


@dramatiq.actor
def add(x, y):
    return x + y


@dramatiq.actor(max_retries=0)
def fail(reason):
    raise ValueError(f"interop failure: {reason}")


# Dramatiq's Retries middleware re-enqueues a failed message after a backoff
# (min_backoff in ms; its default, 15 s, is too slow for a test).
@dramatiq.actor(max_retries=3, min_backoff=100, max_backoff=500)
def flaky(marker):
    # Fails on the first attempt, succeeds on the retry.
    if CurrentMessage.get_current_message().options.get("retries", 0) == 0:
        raise RuntimeError(f"first attempt of {marker}")
    return f"recovered {marker}"


@dramatiq.actor(max_retries=0)
def sleepy(seconds):
    time.sleep(seconds)
    return seconds


# Declared on a queue the operator-action cells' worker does not consume (--queues default): messages
# parked there wait until the purge.
@dramatiq.actor(queue_name="interop_parked")
def parked(x, y):
    return x + y
