// Preloaded by `bun test` (bunfig.toml): a top-level afterAll here runs once, after every file.
import { afterAll } from 'bun:test';
import { removeTempDirs } from './home.ts';

afterAll(removeTempDirs);
