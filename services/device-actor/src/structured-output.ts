import { join, resolve } from 'node:path';
import { ErrorCode, SvcError, type JobRecord } from '@svc/proto';
import { ParserPool, findTemplates, type ParseRequest } from '@svc/parsers';

export interface StructuredParserOptions {
  /** Community template directory (SVC_TEXTFSM_DIR); null disables the lookup. */
  textfsmDir: string | null;
  /** Where ttp:// references resolve (SVC_TTP_TEMPLATES_DIR). */
  ttpDir: string | null;
  /** Budget for one command's parse; a runaway template regex is stopped after it. */
  timeoutMs: number;
}

/**
 * Parses each command's output of a structured job: with the job's TextFSM or TTP template, or
 * the community template the index picks for platform and command. Per command the result is a
 * list of records when a template matched, else the raw text. Parses run in worker threads so
 * that a catastrophically backtracking template cannot stall the actor host.
 */
export function createStructuredParser(options: StructuredParserOptions) {
  let pool: ParserPool | null = null;
  const getPool = () => (pool ??= new ParserPool({ size: 2, timeoutMs: options.timeoutMs }));

  async function parseOutputs(
    record: JobRecord,
    raw: Record<string, unknown>,
    platform: string,
  ): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    for (const [command, value] of Object.entries(raw)) {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      out[command] = await parseOne(record, command, text, platform);
    }
    return out;
  }

  async function parseOne(
    record: JobRecord,
    command: string,
    text: string,
    platform: string,
  ): Promise<unknown> {
    const { textfsm_template: textfsm, ttp_template: ttp } = record.spec;
    let request: ParseRequest;
    if (textfsm) request = { kind: 'textfsm', template: textfsm, input: text };
    else if (ttp) {
      request = {
        kind: 'ttp',
        template: ttp,
        input: text,
        options: {
          ...(options.ttpDir ? { templatesDir: options.ttpDir } : {}),
          // the actor's setting, so a ttp:// reference without it says what to configure
          templatesDirSetting: 'SVC_TTP_TEMPLATES_DIR',
        },
      };
    } else {
      if (!options.textfsmDir) return text;
      const dir = options.textfsmDir;
      let names: string[] | undefined;
      try {
        names = findTemplates(dir, platform, command);
      } catch (err) {
        throw templateError(command, err);
      }
      if (!names || names.length === 0) return text;
      request = { kind: 'textfsm', templatePaths: names.map((n) => join(dir, n)), input: text };
    }
    try {
      // Per owner: one caller's costly templates cannot hold every worker of the host.
      const result = await getPool().run(request, record.owner);
      // TTP answers per template, per input: one template, one input here.
      if (request.kind === 'ttp' && Array.isArray(result) && Array.isArray(result[0])) {
        const perInput = result[0] as unknown[];
        return perInput.length === 1 && Array.isArray(perInput[0]) ? perInput[0] : perInput;
      }
      return result;
    } catch (err) {
      throw templateError(command, err);
    }
  }

  /**
   * The job's TEMPLATE_ERROR. Parser messages may quote the files they read; the template
   * folders are server paths the caller has no business seeing, so they are named by their
   * setting instead (`$SVC_TEXTFSM_DIR/cisco_ios_show_clock.textfsm`).
   */
  function templateError(command: string, err: unknown): SvcError {
    let message = err instanceof Error ? err.message : String(err);
    for (const [setting, dir] of [
      ['$SVC_TEXTFSM_DIR', options.textfsmDir],
      ['$SVC_TTP_TEMPLATES_DIR', options.ttpDir],
    ] as const) {
      if (dir) message = message.split(resolve(dir)).join(setting).split(dir).join(setting);
    }
    // Anything else that looks like an absolute path (a parser's own files) is cut as well.
    message = message.replace(/(?<![\w:/])\/(?:[^\s'"/]+\/)+[^\s'"/]+/g, '<path>');
    return new SvcError(
      ErrorCode.TEMPLATE_ERROR,
      `template failed on ${JSON.stringify(command)}: ${message}`,
    );
  }

  return {
    parseOutputs,
    close: async () => {
      await pool?.close();
    },
  };
}
