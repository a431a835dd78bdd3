// Run by tests as a separate process: migrates the database named by argv[2]
// (a SVC_DATABASE_URL) and prints the revisions it applied as JSON.
import { openDatabase } from '../../src/db/connect.ts';
import { upgrade } from '../../src/db/migrate.ts';
import { parseDatabaseUrl } from '../../src/db/url.ts';

const db = openDatabase(parseDatabaseUrl(process.argv[2]!, '', '/'));
const applied = await upgrade(db);
await db.close();
process.stdout.write(JSON.stringify(applied));
