// Shared plumbing of the CLI: one runner for a cac program that turns usage
// errors into exit code 2, settings errors into a one-line message with exit
// code 2, and anything else into exit code 1, never a stack trace.
import { cac, type CAC } from 'cac';
import { ConfigError } from '../config/load.ts';
import { VERSION } from '../version.ts';

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Exit code for bad usage (unknown command, option or argument). */
export const USAGE = 2;

export const out = (text: string): void => void process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
export const err = (text: string): void => void process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);

export function program(name: string): CAC {
  const cli = cac(name);
  // A command's own --help starts with what it does (cac shows descriptions only in the command list).
  cli.help((sections) => {
    const description = cli.matchedCommand?.description;
    if (description) sections.splice(1, 0, { body: description });
    return sections;
  });
  cli.version(VERSION, '-V, --version');
  return cli;
}

/** The value of a value option as typed (undefined when not given). The
 * argument parser turns values that look like numbers into numbers (`--to
 * 0007` gives 7); this reads the last `--name value` or `--name=value` of the
 * command line instead. */
export function optionText(parsed: unknown, names: string[], argv: string[] = process.argv.slice(2)): string | undefined {
  if (parsed === undefined || parsed === true) return undefined;
  for (let i = argv.length - 1; i >= 0; i--) {
    const a = argv[i]!;
    for (const name of names) {
      if (a.startsWith(`${name}=`)) return a.slice(name.length + 1);
      if (a === name && i + 1 < argv.length) return argv[i + 1];
    }
  }
  return String(parsed);
}

function isUsageError(e: unknown): boolean {
  return e instanceof Error && e.name === 'CACError';
}

/** `--opt -` means "read from stdin"; the argument parser would take the
 * lone dash for a missing value, so pass it as `--opt=-`. */
function joinStdinValues(args: string[]): string[] {
  const out: string[] = [];
  for (const a of args) {
    const prev = out[out.length - 1];
    if (a === '-' && prev?.startsWith('--') && !prev.includes('=')) out[out.length - 1] = `${prev}=-`;
    else out.push(a);
  }
  return out;
}

/** Parses `args` (without the executable) and runs the matched action. */
export async function run(cli: CAC, args: string[]): Promise<number> {
  try {
    cli.parse(['svc', 'svc', ...joinStdinValues(args)], { run: false });
    const { matchedCommand } = cli;
    if (cli.options.help || (cli.options.version && !matchedCommand)) return 0;
    if (!matchedCommand) {
      if (cli.args.length > 0) {
        err(`${cli.name}: unknown command \`${cli.args[0]}\` (see \`${cli.name} --help\`)`);
        return USAGE;
      }
      cli.outputHelp();
      return 0;
    }
    const result = await cli.runMatchedCommand();
    return typeof result === 'number' ? result : 0;
  } catch (e) {
    if (isUsageError(e)) {
      err(`${cli.name}: ${(e as Error).message} (see \`${cli.name} --help\`)`);
      return USAGE;
    }
    if (e instanceof ConfigError) {
      err(`${cli.name}: configuration error: ${e.message}`);
      return USAGE;
    }
    if (e instanceof CliError) {
      err(`${cli.name}: ${e.message}`);
      return e.exitCode;
    }
    err(`${cli.name}: ${(e as Error).message ?? String(e)}`);
    return 1;
  }
}
