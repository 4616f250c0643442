/**
 * Parse requests as data, so they can run in-process or in a worker thread of the pool.
 */
import { readFileSync } from 'node:fs';
import { TemplateError } from './errors.js';
import { parseTemplateFiles, parseTextFsmLower } from './textfsm/cli-table.js';
import { parseWithIndex } from './textfsm/index-lookup.js';
import { parseTtp } from './ttp/mod.js';

/** TextFSM with template text, or template files merged as an index row merges them. */
export type TextFsmRequest = { kind: 'textfsm'; input: string } & (
  | { template: string; templatePaths?: undefined }
  | { templatePaths: readonly string[]; template?: undefined }
);

/** TextFSM with the template chosen by an ntc-templates style index. */
export interface TextFsmIndexRequest {
  kind: 'textfsm-index';
  /** Directory holding `index` and the `*.textfsm` files. */
  dir: string;
  platform: string;
  command: string;
  input: string;
}

export interface TtpRequest {
  kind: 'ttp';
  /** Template text. */
  template: string;
  input: string;
  options?: { templatesDir?: string; templatesDirSetting?: string };
}

export type ParseRequest = TextFsmRequest | TextFsmIndexRequest | TtpRequest;

/** Runs a request synchronously in the calling thread. */
export function executeParseRequest(request: ParseRequest): unknown {
  switch (request.kind) {
    case 'textfsm':
      if (request.template !== undefined) return parseTextFsmLower(request.template, request.input);
      return parseTemplateFiles(request.templatePaths, request.input);
    case 'textfsm-index':
      return parseWithIndex(request.dir, request.platform, request.command, request.input);
    case 'ttp':
      return parseTtp(request.template, request.input, request.options);
    default:
      throw new TemplateError(
        `Unknown parse request kind '${(request as { kind: unknown }).kind as string}'.`,
      );
  }
}

/** Reads a template argument: one path, or several joined with `:` (an index row's merge). */
export function readTemplatePaths(spec: string): string[] {
  return spec.split(':').filter((p) => p !== '');
}

export function readText(path: string): string {
  return readFileSync(path, 'utf8');
}
