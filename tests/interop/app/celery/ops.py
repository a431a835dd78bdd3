"""The interop Celery app as the operator-action cells run it: a prefork pool
(it grows, shrinks and restarts), pool restarts allowed, and a second queue
that the worker is started without (-X interop.parked), so tasks sent there
wait for a purge. Declaring both queues makes z4j-celery report their depths.
"""

from kombu import Queue

from tasks import add, app, fail, sleepy  # noqa: F401  (the tasks the cells run)

app.conf.update(
    task_queues=(Queue("celery"), Queue("interop.parked")),
    task_default_queue="celery",
    worker_pool_restarts=True,
)
