"""The functions the interop schedules run (RQ stores them by import path: jobs.tick, jobs.add)."""


def tick(source):
    return f"tick from {source}"


def add(x, y):
    return x + y
