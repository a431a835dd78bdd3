-- tasks_project_state (project_id, state, started_at) served no query: lookups by state use
-- tasks_project_state_created, and the index cost every task write.
DROP INDEX tasks_project_state;
