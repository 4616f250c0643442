import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Type, type Static } from 'typebox';
import { validatorFor, toIssues } from './validate.js';
import { AUTODETECT, PLATFORMS, type Platform } from './platforms.js';

/**
 * A device driver as data: everything the CLI session needs to know about a platform's CLI
 * (prompts, paging, enable, configuration mode, commit, save, errors, confirmations, context
 * lines). The built-in drivers are such descriptions (`@svc/drivers`); operators add
 * their own as JSON files in SVC_DRIVERS_DIR, checked at start against this schema.
 *
 * Patterns are regular-expression sources (JavaScript syntax); a leading `(?i)` makes one
 * case-insensitive. They come from the operator's files, never from API requests.
 */

const Pattern = Type.String({
  minLength: 1,
  description: 'Regular expression (JavaScript syntax); a leading (?i) ignores case.',
});

export const ConfirmationDescription = Type.Object(
  {
    pattern: Type.String({
      minLength: 1,
      description: 'Tested on the last, unterminated line of output (the question).',
    }),
    answer: Type.String({
      description: 'Sent as typed: include "\\n" when the device needs Enter.',
    }),
  },
  { additionalProperties: false },
);

const Step = Type.Object(
  {
    command: Type.String({ minLength: 1 }),
    confirmations: Type.Optional(Type.Array(ConfirmationDescription)),
    inConfig: Type.Optional(
      Type.Boolean({
        description:
          'Save only: runs in configuration mode, after the commit, before leaving (VyOS).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const DriverDescription = Type.Object(
  {
    platform: Type.String({
      pattern: '^[a-z][a-z0-9_]{1,63}$',
      description: 'Platform id used in jobs (the trusted driver library names where one exists).',
    }),
    name: Type.String({ minLength: 1, description: 'Human name of the operating system.' }),
    prompt: Type.Object(
      {
        login: Type.String({
          minLength: 1,
          description: 'Ends the wait for the first prompt, tested on the last line.',
        }),
        base: Type.String({
          minLength: 1,
          description:
            'Applied to the trimmed prompt line; capture group 1 is the part that stays the same in every mode (R1 of R1(config-if)#).',
        }),
        any: Type.String({
          minLength: 1,
          description:
            'Any prompt of the device; {base} stands for the escaped base prompt (e.g. ^{base}(?:\\([^)]*\\))?[>#]\\s*$).',
        }),
      },
      { additionalProperties: false },
    ),
    loginConfirmations: Type.Optional(
      Type.Array(ConfirmationDescription, {
        description:
          "Questions before the first prompt; {username} and {password} in an answer are the job's credentials (in-band logins).",
      }),
    ),
    enable: Type.Union([
      Type.Null(),
      Type.Object(
        {
          command: Type.String({ minLength: 1 }),
          alternatives: Type.Optional(
            Type.Array(Type.String({ minLength: 1 }), {
              description:
                'Other forms of the enable command, tried in order when the device answers the one before without a password prompt and stays unprivileged (IPOS `enable 15`, then `enable`).',
            }),
          ),
          enabledPrompt: Type.String({
            minLength: 1,
            description: 'A prompt line that is already privileged.',
          }),
          passwordPrompt: Type.String({ minLength: 1 }),
          usernamePrompt: Type.Optional(Type.String({ minLength: 1 })),
        },
        { additionalProperties: false },
      ),
    ]),
    pagingOff: Type.Array(Type.String({ minLength: 1 }), {
      description: 'Sent once per session after enable; a refused one is not fatal.',
    }),
    config: Type.Object(
      {
        enter: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
          description: 'Enters configuration mode; null: lines run at the prompt.',
        }),
        exit: Type.Array(Type.String({ minLength: 1 })),
        abort: Type.Array(Type.String({ minLength: 1 }), {
          description: 'Leaves configuration mode discarding what it can after a rejected line.',
        }),
        prompt: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
          description: 'A prompt line in configuration mode (any depth); null: never.',
        }),
        exitConfirmations: Type.Optional(Type.Array(ConfirmationDescription)),
        textEntry: Type.Optional(
          Type.String({
            minLength: 1,
            description:
              'A line after which the device reads free text with no prompt between lines (IOS banner: "End with the character \'#\'."); group 1 is the text that ends it. The next lines are sent without waiting for a prompt, up to the one holding it.',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    commit: Type.Union([
      Type.Null(),
      Type.Object(
        {
          command: Type.String({ minLength: 1 }),
          confirmations: Type.Optional(Type.Array(ConfirmationDescription)),
          required: Type.Optional(
            Type.Boolean({
              description:
                'The change takes effect only on commit (leaving configuration mode without one discards it, or leaves it in a candidate that outlives the session): config jobs without commit are refused.',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ]),
    save: Type.Union([Step, Type.Literal('commit'), Type.Literal('auto'), Type.Literal('none')]),
    errors: Type.Array(Pattern, {
      description: 'A line matching one means the device rejected the command.',
    }),
    contextLines: Type.Optional(
      Type.Array(Pattern, {
        description: 'Lines printed just above the prompt that are not output ({master:0}).',
      }),
    ),
    pagers: Type.Optional(
      Type.Array(ConfirmationDescription, {
        description:
          'Paging prompts besides the common ones (--More--, ---- More ----, ...) and the key that moves on.',
      }),
    ),
    configNoise: Type.Optional(
      Type.Array(Pattern, {
        description: 'Lines removed from configuration-mode outputs ([edit] banners).',
      }),
    ),
    fingerprint: Type.Optional(
      Type.Object(
        {
          probe: Type.String({ minLength: 1, description: 'Command autodetect sends.' }),
          pattern: Pattern,
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type DriverDescription = Static<typeof DriverDescription>;

/**
 * What the submission checks read from the built-in drivers (commit and save steps). The table
 * lives with the driver code in `@svc/drivers`; the caller passes it, so proto depends on no
 * driver package.
 */
export type BuiltinDriverFacts = Readonly<
  Record<Platform, Pick<DriverDescription, 'save' | 'commit'>>
>;

/** Compiles a description pattern: JavaScript syntax, a leading `(?i)` ignores case. */
export function compilePattern(source: string, flags = ''): RegExp {
  if (source.startsWith('(?i)')) return new RegExp(source.slice(4), `${flags}i`);
  return new RegExp(source, flags);
}

/** Every pattern of a description with where it is, for checking. */
function patternsOf(d: DriverDescription): [string, string][] {
  const out: [string, string][] = [
    ['prompt.login', d.prompt.login],
    ['prompt.base', d.prompt.base],
    ['prompt.any', d.prompt.any.replaceAll('{base}', 'R1')],
  ];
  const confirmations = (where: string, list: readonly { pattern: string }[] | undefined): void =>
    list?.forEach((c, i) => out.push([`${where}.${i}.pattern`, c.pattern]));
  confirmations('loginConfirmations', d.loginConfirmations);
  if (d.enable !== null) {
    out.push(['enable.enabledPrompt', d.enable.enabledPrompt]);
    out.push(['enable.passwordPrompt', d.enable.passwordPrompt]);
    if (d.enable.usernamePrompt !== undefined)
      out.push(['enable.usernamePrompt', d.enable.usernamePrompt]);
  }
  if (d.config.prompt !== null) out.push(['config.prompt', d.config.prompt]);
  confirmations('config.exitConfirmations', d.config.exitConfirmations);
  if (d.config.textEntry !== undefined) out.push(['config.textEntry', d.config.textEntry]);
  if (d.commit !== null) confirmations('commit.confirmations', d.commit.confirmations);
  if (typeof d.save === 'object') confirmations('save.confirmations', d.save.confirmations);
  d.errors.forEach((p, i) => out.push([`errors.${i}`, p]));
  d.contextLines?.forEach((p, i) => out.push([`contextLines.${i}`, p]));
  d.configNoise?.forEach((p, i) => out.push([`configNoise.${i}`, p]));
  confirmations('pagers', d.pagers);
  if (d.fingerprint) out.push(['fingerprint.pattern', d.fingerprint.pattern]);
  return out;
}

/** Problems of one description (schema, patterns), each prefixed with `where`. */
export function driverDescriptionProblems(value: unknown, where: string): string[] {
  const valid = validatorFor(DriverDescription);
  if (!valid(value)) {
    return toIssues(valid.errors ?? [], where).map((i) => `${i.loc.join('.')}: ${i.msg}`);
  }
  const d = value as DriverDescription;
  const problems: string[] = [];
  for (const [loc, source] of patternsOf(d)) {
    try {
      compilePattern(source);
    } catch (err) {
      problems.push(
        `${where}.${loc}: not a valid regular expression (${err instanceof Error ? err.message : String(err)})`,
      );
    }
  }
  if (!d.prompt.any.includes('{base}')) {
    problems.push(`${where}.prompt.any: must contain {base} (the device's own prompt)`);
  }
  return problems;
}

export interface LoadedDrivers {
  drivers: DriverDescription[];
  /** Every problem found, one line each (file name, location, what is wrong). */
  problems: string[];
}

/**
 * Reads every `*.json` file of `dir` as one driver description. Nothing is thrown: each bad
 * file, field or pattern is one entry of `problems`, so a start can report them all at once.
 * A user driver may not take a built-in platform id or `autodetect`, nor one another's.
 */
export function loadDriverDir(dir: string): LoadedDrivers {
  const problems: string[] = [];
  const drivers: DriverDescription[] = [];
  if (dir === '') return { drivers, problems };
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return {
      drivers,
      problems: [`SVC_DRIVERS_DIR: ${JSON.stringify(dir)} cannot be read (${code})`],
    };
  }
  const taken = new Map<string, string>();
  for (const file of files) {
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(join(dir, file), 'utf8'));
    } catch (err) {
      problems.push(
        `SVC_DRIVERS_DIR ${file}: not JSON (${err instanceof Error ? err.message : String(err)})`,
      );
      continue;
    }
    const found = driverDescriptionProblems(value, file);
    if (found.length > 0) {
      problems.push(...found.map((p) => `SVC_DRIVERS_DIR ${p}`));
      continue;
    }
    const d = value as DriverDescription;
    if ((PLATFORMS as readonly string[]).includes(d.platform) || d.platform === AUTODETECT) {
      problems.push(
        `SVC_DRIVERS_DIR ${file}: platform ${JSON.stringify(d.platform)} is built in; choose another id`,
      );
      continue;
    }
    const other = taken.get(d.platform);
    if (other !== undefined) {
      problems.push(
        `SVC_DRIVERS_DIR ${file}: platform ${JSON.stringify(d.platform)} is also described in ${other}`,
      );
      continue;
    }
    taken.set(d.platform, file);
    drivers.push(d);
  }
  return { drivers, problems };
}

/** The setting naming the directory of user driver files (gateway and device actor). */
export const DriverSettings = {
  SVC_DRIVERS_DIR: Type.String({
    default: '',
    description:
      'Directory of user driver descriptions (*.json, one platform each; see docs/devices.md). Read at start; every problem is reported then. Empty: built-in drivers only.',
  }),
};
