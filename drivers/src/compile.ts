import { compilePattern, forbiddenCharIn, type DriverDescription } from '@svc/proto';
import type { Confirmation, Driver } from './driver.js';

/**
 * Turns a driver description (data, built in or from SVC_DRIVERS_DIR) into the run-time
 * {@link Driver} the CLI session uses. The description was validated before (schema and
 * patterns), so compiling cannot fail.
 */
export function compileDriver(d: DriverDescription): Driver {
  const confirmations = (list: DriverDescription['loginConfirmations']): Confirmation[] =>
    (list ?? []).map((c) => ({ pattern: compilePattern(c.pattern), answer: c.answer }));
  const base = compilePattern(d.prompt.base);
  const enabled = d.enable === null ? null : compilePattern(d.enable.enabledPrompt);
  const inConfig = d.config.prompt === null ? null : compilePattern(d.config.prompt);
  const noise = (d.configNoise ?? []).map((p) => compilePattern(p));
  const save = d.save;
  return {
    platform: d.platform,
    loginPrompt: compilePattern(d.prompt.login),
    loginConfirmations: confirmations(d.loginConfirmations),
    basePrompt(line: string): string {
      const trimmed = line.trim();
      return base.exec(trimmed)?.[1] ?? trimmed;
    },
    promptPattern(escapedBase: string): RegExp {
      // A function replacement: `$` in a base prompt must stay literal.
      return compilePattern(d.prompt.any.replaceAll('{base}', () => escapedBase));
    },
    enable:
      d.enable === null || enabled === null
        ? null
        : {
            command: d.enable.command,
            alternatives: d.enable.alternatives ?? [],
            isEnabled: (prompt) => enabled.test(prompt.trim()),
            passwordPrompt: compilePattern(d.enable.passwordPrompt),
            ...(d.enable.usernamePrompt !== undefined
              ? { usernamePrompt: compilePattern(d.enable.usernamePrompt) }
              : {}),
          },
    pagingOff: d.pagingOff,
    config: {
      enter: d.config.enter,
      exit: d.config.exit,
      abort: d.config.abort,
      isConfig: (prompt) => inConfig?.test(prompt.trim()) ?? false,
      exitConfirmations: confirmations(d.config.exitConfirmations),
      textEntry: d.config.textEntry === undefined ? null : compilePattern(d.config.textEntry),
    },
    commit:
      d.commit === null
        ? null
        : { command: d.commit.command, confirmations: confirmations(d.commit.confirmations) },
    commitRequired: d.commit?.required === true,
    save:
      typeof save === 'object'
        ? {
            command: save.command,
            confirmations: confirmations(save.confirmations),
            inConfig: save.inConfig === true,
          }
        : save,
    errorPatterns: d.errors.map((p) => compilePattern(p)),
    contextLines: (d.contextLines ?? []).map((p) => compilePattern(p)),
    pagers: confirmations(d.pagers),
    cleanConfigOutput:
      noise.length === 0
        ? (output) => output
        : (output) =>
            output
              .split('\n')
              .filter((l) => !noise.some((p) => p.test(l.trim())))
              .join('\n')
              .replace(/\n+$/, '')
              .replace(/^\n+/, ''),
  };
}

const CREDENTIAL = /\{(?:username|password)\}/;

/**
 * The driver for one session: `{username}` and `{password}` in its login answers become the
 * job's credentials (Cisco Sx300 and PowerConnect ask both again inside the shell). Drivers
 * without such answers are returned as they are. A credential holding a line break or another
 * control character is never typed (it would send a second line): that question stays
 * unanswered. The filled driver lives as long as its session; what is sent is redacted from
 * transcripts like every password.
 */
export function withLoginCredentials(driver: Driver, username: string, password: string): Driver {
  if (!driver.loginConfirmations.some((c) => CREDENTIAL.test(c.answer))) return driver;
  const typeable = (placeholder: string, value: string, answer: string): boolean =>
    !answer.includes(placeholder) || forbiddenCharIn(value) === null;
  return {
    ...driver,
    loginConfirmations: driver.loginConfirmations
      .filter(
        (c) =>
          typeable('{username}', username, c.answer) && typeable('{password}', password, c.answer),
      )
      .map((c) => ({
        pattern: c.pattern,
        ...(c.answer.includes('{password}') ? { refusedIfAskedAgain: true } : {}),
        answer: c.answer
          .replaceAll('{username}', () => username)
          .replaceAll('{password}', () => password),
      })),
  };
}
