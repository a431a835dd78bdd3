// The address of a task's page, shared by every page that links to tasks.
export const taskHref = (slug: string, t: { engine: string; task_id: string }): string =>
  `/projects/${slug}/tasks/${encodeURIComponent(t.engine)}/${encodeURIComponent(t.task_id)}`;
