#!/usr/bin/env node
/**
 * svc-parse: run TextFSM / TTP templates and the ntc-templates index lookup from a shell.
 * The only module of the package that touches `process`.
 */
import { once } from 'node:events';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { errorToData } from './errors.js';
import { readTemplatePaths, readText } from './parse-request.js';
import { parseTemplateFiles } from './textfsm/cli-table.js';
import { findTemplates } from './textfsm/index-lookup.js';
import { parseTtp } from './ttp/mod.js';

const USAGE = `usage:
  svc-parse textfsm TEMPLATE[:TEMPLATE...] INPUT   parse INPUT, print records as JSON
  svc-parse ttp TEMPLATE INPUT                     parse INPUT with a TTP template, print JSON
  svc-parse index DIR PLATFORM COMMAND             print the template(s) the index selects
  svc-parse batch                                  NDJSON requests on stdin, one answer per line

batch requests:
  {"id": 1, "kind": "textfsm" | "ttp", "template": PATH, "input": PATH}
  {"id": 2, "kind": "index", "dir": PATH, "platform": "cisco_ios", "command": "show version"}
answers: {"id": 1, "result": ...} or {"id": 1, "error": "message"}
`;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

function runTextFsm(templateSpec: string, inputPath: string): unknown {
  return parseTemplateFiles(readTemplatePaths(templateSpec), readText(inputPath));
}

function runTtp(templatePath: string, inputPath: string): unknown {
  return parseTtp(readText(templatePath), readText(inputPath), {
    templatesDir: dirname(templatePath),
  });
}

function runIndex(dir: string, platform: string, command: string): string | null {
  return findTemplates(dir, platform, command)?.join(':') ?? null;
}

function str(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '')
    throw new UsageError(`"${field}" must be a non-empty string`);
  return value;
}

function answerBatchLine(line: string): Record<string, unknown> {
  let id: unknown = null;
  try {
    const req: unknown = JSON.parse(line);
    if (typeof req !== 'object' || req === null || Array.isArray(req)) {
      throw new UsageError('a request must be a JSON object');
    }
    const r = req as Record<string, unknown>;
    id = r['id'] ?? null;
    switch (r['kind']) {
      case 'textfsm':
        return { id, result: runTextFsm(str(r['template'], 'template'), str(r['input'], 'input')) };
      case 'ttp':
        return { id, result: runTtp(str(r['template'], 'template'), str(r['input'], 'input')) };
      case 'index':
        return {
          id,
          result: runIndex(
            str(r['dir'], 'dir'),
            str(r['platform'], 'platform'),
            str(r['command'], 'command'),
          ),
        };
      default:
        throw new UsageError(`unknown kind ${JSON.stringify(r['kind'])} (textfsm, ttp or index)`);
    }
  } catch (err) {
    const data = errorToData(err);
    return { id, error: data.message };
  }
}

async function batch(): Promise<void> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    const out = JSON.stringify(answerBatchLine(line)) + '\n';
    if (!process.stdout.write(out)) await once(process.stdout, 'drain');
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const want = (n: number): void => {
    if (args.length !== n) throw new UsageError(`${command ?? ''} takes ${n} argument(s)`);
  };
  switch (command) {
    case 'textfsm':
      want(2);
      process.stdout.write(
        JSON.stringify(runTextFsm(args[0] as string, args[1] as string), null, 2) + '\n',
      );
      return 0;
    case 'ttp':
      want(2);
      process.stdout.write(
        JSON.stringify(runTtp(args[0] as string, args[1] as string), null, 2) + '\n',
      );
      return 0;
    case 'index': {
      want(3);
      const found = runIndex(args[0] as string, args[1] as string, args[2] as string);
      if (found === null) {
        process.stderr.write(
          `svc-parse: no template for platform '${args[1] ?? ''}' and command '${args[2] ?? ''}'\n`,
        );
        return 1;
      }
      process.stdout.write(found + '\n');
      return 0;
    }
    case 'batch':
      want(0);
      await batch();
      return 0;
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case undefined:
      throw new UsageError('missing command');
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`svc-parse: ${err.message}\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`svc-parse: ${errorToData(err).message}\n`);
    process.exitCode = 1;
  },
);
