// The background jobs of one process and how their last tick went (deep health,
// svc_background_task_error_active). Below the app context, which holds the
// board; server/schedule.ts runs the jobs.

export interface JobStatus {
  name: string;
  interval_ms: number;
  /** Ticks run so far in this process. */
  runs: number;
  last_started_at: string | null;
  last_finished_at: string | null;
  /** The last tick's error, or null when it succeeded (or none ran yet). */
  last_error: string | null;
}

/** The background jobs of this process and how their last tick went. */
export class JobBoard {
  private readonly jobs = new Map<string, JobStatus>();

  register(name: string, intervalMs: number): JobStatus {
    const status: JobStatus = { name, interval_ms: intervalMs, runs: 0, last_started_at: null, last_finished_at: null, last_error: null };
    this.jobs.set(name, status);
    return status;
  }

  all(): JobStatus[] {
    return [...this.jobs.values()].map((j) => ({ ...j }));
  }
}
