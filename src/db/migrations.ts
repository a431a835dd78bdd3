// The migrations embedded in the binary (the compiled `svc` has no
// migrations/ folder on disk). One entry per numbered file, both dialects.
import f0001s from '../../migrations/sqlite/0001_foundation.sql' with { type: 'text' };
import f0001p from '../../migrations/postgres/0001_foundation.sql' with { type: 'text' };
import f0002s from '../../migrations/sqlite/0002_audit.sql' with { type: 'text' };
import f0002p from '../../migrations/postgres/0002_audit.sql' with { type: 'text' };
import f0003s from '../../migrations/sqlite/0003_identity.sql' with { type: 'text' };
import f0003p from '../../migrations/postgres/0003_identity.sql' with { type: 'text' };
import f0004s from '../../migrations/sqlite/0004_agents.sql' with { type: 'text' };
import f0004p from '../../migrations/postgres/0004_agents.sql' with { type: 'text' };
import f0005s from '../../migrations/sqlite/0005_task_listing.sql' with { type: 'text' };
import f0005p from '../../migrations/postgres/0005_task_listing.sql' with { type: 'text' };
import f0006s from '../../migrations/sqlite/0006_drop_unused_task_index.sql' with { type: 'text' };
import f0006p from '../../migrations/postgres/0006_drop_unused_task_index.sql' with { type: 'text' };
import f0007s from '../../migrations/sqlite/0007_events_by_task_id.sql' with { type: 'text' };
import f0007p from '../../migrations/postgres/0007_events_by_task_id.sql' with { type: 'text' };
import f0008s from '../../migrations/sqlite/0008_events_by_task_row.sql' with { type: 'text' };
import f0008p from '../../migrations/postgres/0008_events_by_task_row.sql' with { type: 'text' };
import f0009s from '../../migrations/sqlite/0009_notifications.sql' with { type: 'text' };
import f0009p from '../../migrations/postgres/0009_notifications.sql' with { type: 'text' };
import f0010s from '../../migrations/sqlite/0010_task_search.sql' with { type: 'text' };
import f0010p from '../../migrations/postgres/0010_task_search.sql' with { type: 'text' };
import f0011s from '../../migrations/sqlite/0011_task_aggregates.sql' with { type: 'text' };
import f0011p from '../../migrations/postgres/0011_task_aggregates.sql' with { type: 'text' };
import f0012s from '../../migrations/sqlite/0012_bulk_jobs.sql' with { type: 'text' };
import f0012p from '../../migrations/postgres/0012_bulk_jobs.sql' with { type: 'text' };
import f0013s from '../../migrations/sqlite/0013_schedules.sql' with { type: 'text' };
import f0013p from '../../migrations/postgres/0013_schedules.sql' with { type: 'text' };
import f0014s from '../../migrations/sqlite/0014_sso.sql' with { type: 'text' };
import f0014p from '../../migrations/postgres/0014_sso.sql' with { type: 'text' };
import f0015s from '../../migrations/sqlite/0015_scheduler.sql' with { type: 'text' };
import f0015p from '../../migrations/postgres/0015_scheduler.sql' with { type: 'text' };
import f0016s from '../../migrations/sqlite/0016_saved_views.sql' with { type: 'text' };
import f0016p from '../../migrations/postgres/0016_saved_views.sql' with { type: 'text' };
import f0017s from '../../migrations/sqlite/0017_aggregate_shards.sql' with { type: 'text' };
import f0017p from '../../migrations/postgres/0017_aggregate_shards.sql' with { type: 'text' };
import f0018s from '../../migrations/sqlite/0018_task_search_updates.sql' with { type: 'text' };
import f0018p from '../../migrations/postgres/0018_task_search_updates.sql' with { type: 'text' };
import f0019s from '../../migrations/sqlite/0019_sso_reverify.sql' with { type: 'text' };
import f0019p from '../../migrations/postgres/0019_sso_reverify.sql' with { type: 'text' };
import f0020s from '../../migrations/sqlite/0020_task_search_writes.sql' with { type: 'text' };
import f0020p from '../../migrations/postgres/0020_task_search_writes.sql' with { type: 'text' };
import f0021s from '../../migrations/sqlite/0021_task_tree_roots.sql' with { type: 'text' };
import f0021p from '../../migrations/postgres/0021_task_tree_roots.sql' with { type: 'text' };

export interface MigrationSource {
  revision: string;
  name: string;
  sqlite: string;
  postgres: string;
}

export const MIGRATIONS: MigrationSource[] = [
  { revision: '0001', name: 'foundation', sqlite: f0001s, postgres: f0001p },
  { revision: '0002', name: 'audit', sqlite: f0002s, postgres: f0002p },
  { revision: '0003', name: 'identity', sqlite: f0003s, postgres: f0003p },
  { revision: '0004', name: 'agents', sqlite: f0004s, postgres: f0004p },
  { revision: '0005', name: 'task_listing', sqlite: f0005s, postgres: f0005p },
  { revision: '0006', name: 'drop_unused_task_index', sqlite: f0006s, postgres: f0006p },
  { revision: '0007', name: 'events_by_task_id', sqlite: f0007s, postgres: f0007p },
  { revision: '0008', name: 'events_by_task_row', sqlite: f0008s, postgres: f0008p },
  { revision: '0009', name: 'notifications', sqlite: f0009s, postgres: f0009p },
  { revision: '0010', name: 'task_search', sqlite: f0010s, postgres: f0010p },
  { revision: '0011', name: 'task_aggregates', sqlite: f0011s, postgres: f0011p },
  { revision: '0012', name: 'bulk_jobs', sqlite: f0012s, postgres: f0012p },
  { revision: '0013', name: 'schedules', sqlite: f0013s, postgres: f0013p },
  { revision: '0014', name: 'sso', sqlite: f0014s, postgres: f0014p },
  { revision: '0015', name: 'scheduler', sqlite: f0015s, postgres: f0015p },
  { revision: '0016', name: 'saved_views', sqlite: f0016s, postgres: f0016p },
  { revision: '0017', name: 'aggregate_shards', sqlite: f0017s, postgres: f0017p },
  { revision: '0018', name: 'task_search_updates', sqlite: f0018s, postgres: f0018p },
  { revision: '0019', name: 'sso_reverify', sqlite: f0019s, postgres: f0019p },
  { revision: '0020', name: 'task_search_writes', sqlite: f0020s, postgres: f0020p },
  { revision: '0021', name: 'task_tree_roots', sqlite: f0021s, postgres: f0021p },
];
