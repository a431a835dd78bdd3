-- The task tree: a root's tasks by root id, so the tree of a chain, group or chord also holds the
-- branches hanging under a task svc never stored (lost events, or pruned by retention), which the walk
-- down the parent links cannot reach. Only tasks that name a root are in it: standalone tasks cost it
-- nothing, as with tasks_project_parent. With the row id: first stored first, read in index order.
CREATE INDEX tasks_project_root ON tasks (project_id, engine, root_task_id, id) WHERE root_task_id IS NOT NULL;
