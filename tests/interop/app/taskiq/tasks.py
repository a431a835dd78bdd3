"""TaskIQ tasks for the interop suite: a real worker with the real z4j agent.

The broker (taskiq-redis's RedisStreamBroker, with its Redis result backend
and TaskIQ's own SimpleRetryMiddleware) is shared by producers (enqueue.py here, a
web app in real life) and by `taskiq worker tasks:broker`. The z4j lines:

- attach_to_broker(broker, adapter=adapter) at import, before any broker
  startup: it adds z4j's middleware (which turns TaskIQ's middleware hooks into
  task events) and binds the adapter to the loop that starts the broker;
- install_agent(engines=[adapter]) in a WORKER_STARTUP handler, so the agent
  (configured by the Z4J_* environment variables) runs in each worker process
  only, never in a producer.
"""

import asyncio
import os

from taskiq import Context, SimpleRetryMiddleware, TaskiqDepends, TaskiqEvents, TaskiqState
from taskiq_redis import RedisAsyncResultBackend, RedisStreamBroker
from z4j_bare import install_agent
from z4j_taskiq import TaskiqEngineAdapter, attach_to_broker

url = os.environ["INTEROP_BROKER_URL"]
# RedisStreamBroker, not ListQueueBroker: the list broker's BRPOP waits without
# end on a connection that redis-py 8 times out after 5 s (its default
# socket_timeout), and the idle worker process dies with TimeoutError.
broker = (
    RedisStreamBroker(url=url)
    .with_result_backend(RedisAsyncResultBackend(redis_url=url))
    # Retries only for tasks labelled retry_on_error=True (flaky below).
    .with_middlewares(SimpleRetryMiddleware(default_retry_count=3))
)

adapter = TaskiqEngineAdapter(broker=broker)
attach_to_broker(broker, adapter=adapter)


@broker.on_event(TaskiqEvents.WORKER_STARTUP)
async def start_z4j_agent(state: TaskiqState) -> None:
    # The agent runs in a background thread of the worker process.
    state.z4j_agent = install_agent(engines=[adapter])


@broker.task
async def add(x: int, y: int) -> int:
    return x + y


@broker.task
async def fail(reason: str) -> None:
    raise ValueError(f"interop failure: {reason}")


@broker.task(retry_on_error=True, max_retries=2)
async def flaky(marker: str, context: Context = TaskiqDepends()) -> str:
    # SimpleRetryMiddleware re-sends the message (same task id) with the
    # _retries label raised: the first attempt fails, the retry succeeds.
    if int(context.message.labels.get("_retries", 0)) == 0:
        raise RuntimeError(f"first attempt of {marker}")
    return f"recovered {marker}"


@broker.task
async def sleepy(seconds: float) -> float:
    await asyncio.sleep(seconds)
    return seconds
