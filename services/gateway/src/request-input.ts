import type { ErrorObject, ValidateFunction } from 'ajv';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createAjv, toIssues, type ValidationIssue } from '@svc/proto';
import { HttpError } from './http-errors.js';
import { BODY_OPTIONAL, ISSUE, type IssueText } from './routes/route-schemas.js';

/**
 * A request's input is judged by its route's schemas, compiled by Fastify with the project's
 * Ajv (`createAjv`: all errors, formats, no coercion, no defaults). Fastify validates every
 * part before the handler but attaches the outcome (`attachValidation`) instead of answering:
 * a handler authenticates and checks the caller's role first (401 and 403 come before 422,
 * so nobody learns the API's rules without credentials), then asks for each part with
 * `validInput` at the point where its answer is due. A part a handler never asks for is
 * documented but not enforced.
 */

/** The parts of a request a route schema describes, as Fastify names them. */
export type RequestPart = 'body' | 'querystring' | 'params' | 'headers';

/** Where a part's issues are located (`loc[0]` of the specification's 422 body). */
const LOC: Record<RequestPart, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/**
 * Query and path values are text: an integer property takes a text of digits (signs and
 * surrounding blanks allowed, nothing else: not `1.5`, `1e3` or `0x10`), a repeated query
 * parameter its last value, and an absent one the schema's `default`. What does not convert
 * stays text, so that its type error is a parsing error (`int_parsing`).
 */
const INTEGER_TEXT = /^\s*[+-]?\d+\s*$/;
const PARSING: Record<string, string> = {
  int_type: 'int_parsing',
  float_type: 'float_parsing',
  bool_type: 'bool_parsing',
};

type Json = Record<string, unknown>;

function fromText(schema: Json, data: unknown): Json {
  const out: Json = { ...((data ?? {}) as Json) };
  const properties = (schema['properties'] ?? {}) as Record<string, Json>;
  for (const [name, property] of Object.entries(properties)) {
    let value = out[name];
    if (Array.isArray(value) && property['type'] !== 'array') value = value[value.length - 1];
    if (value === undefined) {
      if ('default' in property) out[name] = property['default'];
      continue;
    }
    if (property['type'] === 'integer' && typeof value === 'string' && INTEGER_TEXT.test(value)) {
      value = Number(value);
    }
    out[name] = value;
  }
  return out;
}

/** A compiled validator of text parts: converts (see `fromText`), then validates. */
interface TextValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
  convert: (data: unknown) => Json;
  check: ValidateFunction;
}

/**
 * Fastify's validator factory: one Ajv with the project's options and every shared schema
 * (`addSchema`), so a route names a proto schema by `$ref` and is judged exactly as `check`
 * judges it.
 */
/**
 * One Ajv for the requests of every gateway in the process: the shared schemas are the same
 * constants for each, and a new instance per Fastify context compiled Ajv's meta-schema and
 * every shared schema again (seconds of a gateway's start).
 */
let requestAjv: ReturnType<typeof createAjv> | undefined;

export function buildRequestValidator(shared: Record<string, unknown>) {
  requestAjv ??= createAjv();
  const ajv = requestAjv;
  for (const schema of Object.values(shared)) {
    const id = (schema as { $id?: unknown }).$id;
    if (typeof id === 'string' && ajv.schemas[id] !== undefined) continue;
    ajv.addSchema(schema as object);
  }
  return ({ schema, httpPart }: { schema: unknown; httpPart?: string }) => {
    const check = ajv.compile(schema as object);
    if (httpPart !== 'querystring' && httpPart !== 'params') return check;
    // Fastify keeps the raw text on the request (a `true` answer replaces nothing):
    // `validInput` hands a handler the converted values.
    const convert = (data: unknown) => fromText(schema as Json, data);
    const validator: TextValidator = Object.assign(
      (data: unknown) => {
        const ok = check(convert(data));
        validator.errors = ok ? null : check.errors;
        return ok;
      },
      { convert, check },
    );
    return validator;
  };
}

/** Ajv errors of a part → the specification's issues, with a schema's own wording when given. */
export function issuesOf(errors: readonly ErrorObject[], part: RequestPart): ValidationIssue[] {
  const where = LOC[part];
  const worded = new Map<string, IssueText>();
  for (const e of errors) {
    const text = e.parentSchema?.[ISSUE] as IssueText | undefined;
    if (text) worded.set(e.instancePath, text);
  }
  return toIssues(errors, where).map((issue) => {
    const path = `/${issue.loc.slice(1).join('/')}`;
    const text = worded.get(path);
    if (text) {
      const loc = text.name === undefined ? issue.loc : [...issue.loc.slice(0, -1), text.name];
      return { loc, msg: text.msg, type: text.type };
    }
    if (part === 'querystring' || part === 'params') {
      return { ...issue, type: PARSING[issue.type] ?? issue.type };
    }
    return issue;
  });
}

/** Fastify's schema error formatter: the 422 a part's issues are answered with. */
export function schemaErrorFormatter(errors: ErrorObject[], dataVar: string): Error {
  return HttpError.validation(issuesOf(errors, dataVar as RequestPart));
}

const rawBodies = new WeakMap<FastifyRequest, string>();
const bodyProblems = new WeakMap<FastifyRequest, ValidationIssue>();

/** The body as the client sent it (a route that passes it on, e.g. v1 replay). */
export function rawBodyOf(req: FastifyRequest): string | undefined {
  return rawBodies.get(req);
}

/**
 * Parses JSON bodies without answering: bad JSON is a 422 like any other bad input, given by
 * `validInput` in its turn (after authentication), not by the parser.
 */
export function parseJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    rawBodies.set(req, text);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text) as unknown);
    } catch {
      bodyProblems.set(req, { loc: ['body'], msg: 'body is not valid JSON', type: 'json_invalid' });
      done(null, undefined);
    }
  });
}

const bodyOptional = (req: FastifyRequest): boolean =>
  (req.routeOptions.schema as Json | undefined)?.[BODY_OPTIONAL] === true;

/**
 * A part of the request, checked against its route schema (query and path values converted
 * from text); throws the 422 to answer. The body: bad JSON and a missing body (`{}` where the
 * route's body is optional) are answered here too.
 */
export function validInput<T>(req: FastifyRequest, part: RequestPart): T {
  if (part === 'body') return validBody<T>(req);
  const raw = part === 'querystring' ? req.query : req[part];
  const fn = req.getValidationFunction(part) as ValidateFunction | TextValidator | undefined;
  if (!fn) return raw as T;
  const convert = 'convert' in fn ? fn.convert : null;
  const check = 'check' in fn ? fn.check : fn;
  const value = convert ? convert(raw) : raw;
  if (!check(value)) throw HttpError.validation(issuesOf(check.errors ?? [], part));
  return value as T;
}

/**
 * The body as JSON, not yet judged by its schema: throws the 422 of bad JSON or of a missing
 * body (`{}` where the route's body is optional). For a handler with a check due between the
 * two (a submission's X-Svc-Command-Policy).
 */
export function parsedBody(req: FastifyRequest): unknown {
  const problem = bodyProblems.get(req);
  if (problem) throw HttpError.validation([problem]);
  if (req.body !== undefined) return req.body;
  if (!bodyOptional(req)) {
    throw HttpError.validation([
      { loc: ['body'], msg: 'a JSON body is required', type: 'missing' },
    ]);
  }
  return {};
}

function validBody<T>(req: FastifyRequest): T {
  const value = parsedBody(req);
  // Every part passed already (a missing optional body was judged as `null`, not `{}`).
  if (!req.validationError && req.body !== undefined) return value as T;
  const byType = req.getValidationFunction('body') as
    ValidateFunction | Record<string, ValidateFunction> | undefined;
  const fn = typeof byType === 'function' ? byType : byType?.[req.mediaType ?? ''];
  if (fn && !fn(value)) throw HttpError.validation(issuesOf(fn.errors ?? [], 'body'));
  return value as T;
}
