"""The functions the interop APScheduler jobs run (in the scheduler's own thread pool)."""


def tick(source):
    return f"tick from {source}"


def add(x, y):
    return x + y
