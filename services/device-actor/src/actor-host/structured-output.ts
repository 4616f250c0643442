import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  COMMUNITY_TEMPLATES_DIR,
  ErrorCode,
  SvcError,
  TEXTFSM_COLLECTION,
  TTP_COLLECTION,
  type JobRecord,
} from '@svc/proto';
import {
  ParserPool,
  clearTemplateIndexCache,
  findTemplates,
  type ParseRequest,
} from '@svc/parsers';

export interface StructuredParserOptions {
  /** Community template directory (SVC_TEXTFSM_DIR); null: the installed collection, if any. */
  textfsmDir: string | null;
  /** Where ttp:// references resolve (SVC_TTP_TEMPLATES_DIR); null: the installed collection. */
  ttpDir: string | null;
  /**
   * Where `svc templates install` puts the collections (under SVC_DATA_DIR), used when the
   * settings above are empty. Looked at per job: an install needs no restart.
   */
  installed?: { textfsm: string; ttp: string };
  /** Budget for one command's parse; a runaway template regex is stopped after it. */
  timeoutMs: number;
}

/** Per command of a structured job: whether a template parsed it, and which (command_status). */
export interface ParseNote {
  parsed: boolean;
  template: string | null;
}

export interface ParsedOutputs {
  results: Record<string, unknown>;
  notes: Record<string, ParseNote>;
}

const NOT_PARSED: ParseNote = { parsed: false, template: null };

/**
 * Parses each command's output of a structured job: with the job's TextFSM or TTP template, or
 * the community template the index picks for platform and command. Per command the result is a
 * list of records when a template matched, else the raw text. Parses run in worker threads so
 * that a catastrophically backtracking template cannot stall the actor host.
 */
export function createStructuredParser(options: StructuredParserOptions) {
  let pool: ParserPool | null = null;
  const getPool = () => (pool ??= new ParserPool({ size: 2, timeoutMs: options.timeoutMs }));
  /** The installed index as last seen (inode and mtime): a reinstall drops the cached index. */
  let installedIndex: string | null = null;

  /** The template folders in force for one job: the settings, else what is installed. */
  function folders(): { textfsm: string | null; ttp: string | null } {
    const installed = options.installed;
    let textfsm = options.textfsmDir;
    if (!textfsm && installed) {
      const seen = fileStamp(join(installed.textfsm, 'index'));
      if (seen !== installedIndex) {
        clearTemplateIndexCache(installed.textfsm);
        installedIndex = seen;
      }
      textfsm = seen === null ? null : installed.textfsm;
    }
    let ttp = options.ttpDir;
    if (!ttp && installed && isDirectory(installed.ttp)) ttp = installed.ttp;
    return { textfsm, ttp };
  }

  async function parseOutputs(
    record: JobRecord,
    raw: Record<string, unknown>,
    platform: string,
  ): Promise<ParsedOutputs> {
    const dirs = folders();
    const results: Record<string, unknown> = {};
    const notes: Record<string, ParseNote> = {};
    for (const [command, value] of Object.entries(raw)) {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      const one = await parseOne(record, command, text, platform, dirs);
      results[command] = one.value;
      notes[command] = one.note;
    }
    return { results, notes };
  }

  async function parseOne(
    record: JobRecord,
    command: string,
    text: string,
    platform: string,
    dirs: { textfsm: string | null; ttp: string | null },
  ): Promise<{ value: unknown; note: ParseNote }> {
    const { textfsm_template: textfsm, ttp_template: ttp } = record.spec;
    let request: ParseRequest;
    let template: string;
    if (textfsm) {
      request = { kind: 'textfsm', template: textfsm, input: text };
      template = 'textfsm_template';
    } else if (ttp) {
      request = {
        kind: 'ttp',
        template: ttp,
        input: text,
        options: {
          ...(dirs.ttp ? { templatesDir: dirs.ttp } : {}),
          // the actor's setting, so a ttp:// reference without it says what to configure
          templatesDirSetting: 'SVC_TTP_TEMPLATES_DIR',
        },
      };
      // A reference names itself; template text is named by the field that carried it.
      template = ttp.startsWith('ttp://') ? ttp.trim() : 'ttp_template';
    } else {
      if (!dirs.textfsm) return { value: text, note: NOT_PARSED };
      const dir = dirs.textfsm;
      let names: string[] | undefined;
      try {
        names = findTemplates(dir, platform, command);
      } catch (err) {
        throw templateError(command, err);
      }
      if (!names || names.length === 0) return { value: text, note: NOT_PARSED };
      request = { kind: 'textfsm', templatePaths: names.map((n) => join(dir, n)), input: text };
      template = names.join(':');
    }
    try {
      // Per owner: one caller's costly templates cannot hold every worker of the host.
      const result = await getPool().run(request, record.owner);
      const note = { parsed: true, template };
      // TTP answers per template, per input: one template, one input here.
      if (request.kind === 'ttp' && Array.isArray(result) && Array.isArray(result[0])) {
        const perInput = result[0] as unknown[];
        return {
          value: perInput.length === 1 && Array.isArray(perInput[0]) ? perInput[0] : perInput,
          note,
        };
      }
      return { value: result, note };
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
      [
        `$SVC_DATA_DIR/${COMMUNITY_TEMPLATES_DIR}/${TEXTFSM_COLLECTION}`,
        options.installed?.textfsm,
      ],
      [`$SVC_DATA_DIR/${COMMUNITY_TEMPLATES_DIR}/${TTP_COLLECTION}`, options.installed?.ttp],
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

/** `inode:mtime` of a file, or null when it is absent. */
function fileStamp(path: string): string | null {
  try {
    const st = statSync(path);
    return st.isFile() ? `${st.ino}:${st.mtimeMs}` : null;
  } catch {
    return null;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
