import { Type } from 'typebox';

/**
 * The rules for text that reaches a device's CLI: user names, passwords, enable secrets, commands
 * and configuration lines. A device reads a line break as "run this", so one hidden in a secret
 * or a command would run a line nobody asked for (and no record would show it); other control
 * characters edit, interrupt (`^C`), suspend (`^Z`) or complete (tab) what was typed. So none of
 * them is accepted: C0 (U+0000-U+001F, tab included), DEL (U+007F), C1 (U+0080-U+009F, NEL
 * U+0085 included) and the Unicode line and paragraph separators (U+2028, U+2029).
 */
export const DEVICE_TEXT_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$';

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;

/** The first character a device must never receive, or null when `text` has none. */
export function forbiddenCharIn(text: string): { index: number; codePoint: number } | null {
  const m = FORBIDDEN.exec(text);
  if (m === null) return null;
  return { index: m.index, codePoint: m[0].codePointAt(0) ?? 0 };
}

/** True when `text` can be written to a device as (part of) one line. */
export function isDeviceText(text: string): boolean {
  return !FORBIDDEN.test(text);
}

/** `U+000A` style name of a code point. */
export function codePointName(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** The message of a value that holds a forbidden character (never the value itself). */
export function deviceTextMessage(found: { index: number; codePoint: number }): string {
  return (
    `character ${codePointName(found.codePoint)} at position ${found.index} is not allowed: ` +
    'no line breaks or other control characters (C0, DEL, C1, U+2028, U+2029)'
  );
}

/** Longest user name, password or enable secret, in characters. */
export const MAX_SECRET_LENGTH = 1024;

/** Longest `expect_string`, in characters. */
export const MAX_PATTERN_LENGTH = 1024;

/**
 * Limits of a submission's commands. The gateway's settings (`SVC_MAX_COMMANDS`,
 * `SVC_MAX_COMMAND_LENGTH`) override the defaults; the total body is bounded by
 * `SVC_BODY_LIMIT` before any of this runs.
 */
export interface DeviceInputLimits {
  /** Most commands (or configuration lines) in one job. Default 1000. */
  maxCommands: number;
  /** Most characters in one command or configuration line. Default 4096. */
  maxCommandLength: number;
}

export const DEFAULT_DEVICE_INPUT_LIMITS: Readonly<DeviceInputLimits> = Object.freeze({
  maxCommands: 1000,
  maxCommandLength: 4096,
});

/** A string field whose value is written to a device (see {@link DEVICE_TEXT_PATTERN}). */
export function DeviceText(description: string, maxLength?: number) {
  return Type.String({
    pattern: DEVICE_TEXT_PATTERN,
    ...(maxLength !== undefined ? { maxLength } : {}),
    description,
  });
}

/** `DeviceText` or null. */
export function NullableDeviceText(description: string, maxLength?: number) {
  return Type.Union([DeviceText(description, maxLength), Type.Null()], { description });
}
