"""The arq WorkerSettings with the z4j agent: arq worker.WorkerSettings --custom-log-dict worker.log_config

What a user adds to their WorkerSettings module:
- an ArqEngineAdapter naming the job functions (arq has no registry to discover);
- attach_to_worker_settings(WorkerSettings, adapter=...) at import time, before
  arq builds the Worker: it chains z4j's on_job_start / after_job_end capture onto
  the user's own hooks;
- install_agent(engines=[adapter]) in on_startup, so the agent (a background
  thread, configured by the Z4J_* environment variables) runs only in the worker;
- keep_result > 0 (arq's default is 3600 s): the adapter reads the stored result
  to report success or failure; allow_abort_jobs=True for cancel (Job.abort).
"""

from z4j_arq import ArqEngineAdapter, attach_to_worker_settings
from z4j_bare import install_agent

from tasks import FUNCTIONS, REDIS_SETTINGS

z4j_adapter = ArqEngineAdapter(
    redis_settings=REDIS_SETTINGS,
    function_names=[f.__name__ for f in FUNCTIONS],
)


async def startup(ctx):
    ctx["z4j_agent"] = install_agent(engines=[z4j_adapter])


class WorkerSettings:
    functions = FUNCTIONS
    redis_settings = REDIS_SETTINGS
    on_startup = startup
    keep_result = 3600
    allow_abort_jobs = True


attach_to_worker_settings(WorkerSettings, adapter=z4j_adapter)

# arq's default logging configures only the `arq` logger; this one also shows
# the agent's lines ("z4j agent connected: session=...") at INFO level.
log_config = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "root": {"handlers": ["console"], "level": "INFO"},
}
