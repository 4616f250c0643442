import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitUntil } from './wait.js';

/** One span as a collector received it, with the resource it came from. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** The resource attribute `svc.component`. */
  component: string;
  /** The resource attribute `service.name`. */
  serviceName: string;
  /** Every string attribute of the span's resource. */
  resource: Record<string, string>;
}

type Field = { no: number; value: Buffer | number };

/**
 * Protobuf wire format, just enough of it for an OTLP ExportTraceServiceRequest (field numbers
 * from opentelemetry-proto's trace.proto, common.proto and resource.proto). No npm package ships
 * a decoder for it (the OTLP exporters only encode), and a test collector needs a few fields.
 */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): number => {
    let n = 0;
    let shift = 0;
    for (;;) {
      const b = buf[i++]!;
      n += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return n;
      shift += 7;
    }
  };
  while (i < buf.length) {
    const key = varint();
    const no = Math.floor(key / 8);
    switch (key & 7) {
      case 0:
        out.push({ no, value: varint() });
        break;
      case 1:
        i += 8;
        break;
      case 2: {
        const len = varint();
        out.push({ no, value: buf.subarray(i, i + len) });
        i += len;
        break;
      }
      case 5:
        i += 4;
        break;
      default:
        throw new Error(`unsupported wire type ${key & 7}`);
    }
  }
  return out;
}

const sub = (buf: Buffer, no: number) =>
  fields(buf)
    .filter((f) => f.no === no && Buffer.isBuffer(f.value))
    .map((f) => f.value as Buffer);

/**
 * Decodes ExportTraceServiceRequest { resource_spans = 1 } → ResourceSpans { resource = 1
 * (attributes = 1: KeyValue { key = 1, value = 2: AnyValue { string_value = 1 } }),
 * scope_spans = 2 } → ScopeSpans { spans = 2 } → Span { trace_id = 1, span_id = 2,
 * parent_span_id = 4, name = 5 }.
 */
export function decodeExportTraceRequest(request: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of sub(request, 1)) {
    const resource: Record<string, string> = {};
    for (const r of sub(rs, 1)) {
      for (const kv of sub(r, 1)) {
        const key = sub(kv, 1)[0]?.toString('utf8') ?? '';
        const any = sub(kv, 2)[0];
        const text = any ? sub(any, 1)[0] : undefined;
        if (text) resource[key] = text.toString('utf8');
      }
    }
    for (const ss of sub(rs, 2)) {
      for (const span of sub(ss, 2)) {
        spans.push({
          traceId: sub(span, 1)[0]?.toString('hex') ?? '',
          spanId: sub(span, 2)[0]?.toString('hex') ?? '',
          parentSpanId: sub(span, 4)[0]?.toString('hex') ?? '',
          name: sub(span, 5)[0]?.toString('utf8') ?? '',
          component: resource['svc.component'] ?? '',
          serviceName: resource['service.name'] ?? '',
          resource,
        });
      }
    }
  }
  return spans;
}

interface JsonTraceRequest {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value?: { stringValue?: string } }[] };
    scopeSpans?: {
      spans?: { traceId?: string; spanId?: string; parentSpanId?: string; name?: string }[];
    }[];
  }[];
}

/** Decodes an OTLP/HTTP JSON ExportTraceServiceRequest (ids are hex strings there). */
export function decodeJsonTraceRequest(request: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  const parsed = JSON.parse(request.toString('utf8')) as JsonTraceRequest;
  for (const rs of parsed.resourceSpans ?? []) {
    const resource: Record<string, string> = {};
    for (const kv of rs.resource?.attributes ?? []) {
      if (kv.value?.stringValue !== undefined) resource[kv.key] = kv.value.stringValue;
    }
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        spans.push({
          traceId: span.traceId ?? '',
          spanId: span.spanId ?? '',
          parentSpanId: span.parentSpanId ?? '',
          name: span.name ?? '',
          component: resource['svc.component'] ?? '',
          serviceName: resource['service.name'] ?? '',
          resource,
        });
      }
    }
  }
  return spans;
}

/**
 * A test collector for OTLP over HTTP/protobuf: accepts `POST /v1/traces` with
 * `application/x-protobuf` only (JSON is refused with 415, so a passing test proves protobuf)
 * and answers an empty ExportTraceServiceResponse. Loopback, random port.
 */
export class OtlpHttpCollector {
  readonly spans: ReceivedSpan[] = [];
  /** Requests that were not protobuf trace exports (method, path, content type). */
  readonly refused: string[] = [];
  private constructor(
    private readonly server: Server,
    readonly tracesUrl: string,
  ) {}

  /** @param options.json accept OTLP/HTTP JSON instead (protobuf is refused then). */
  static async start(options: { json?: boolean } = {}): Promise<OtlpHttpCollector> {
    let collector: OtlpHttpCollector | null = null;
    const expected = options.json ? 'application/json' : 'application/x-protobuf';
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const type = req.headers['content-type'] ?? '';
        if (req.method !== 'POST' || req.url !== '/v1/traces' || type !== expected) {
          collector?.refused.push(`${req.method} ${req.url} ${type}`);
          res.writeHead(415).end();
          return;
        }
        const body = Buffer.concat(chunks);
        collector?.spans.push(
          ...(options.json ? decodeJsonTraceRequest(body) : decodeExportTraceRequest(body)),
        );
        res.writeHead(200, { 'content-type': expected }).end(options.json ? '{}' : undefined);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    collector = new OtlpHttpCollector(server, `http://127.0.0.1:${port}/v1/traces`);
    return collector;
  }

  /** Waits until `found` holds for the spans received so far. */
  async waitFor(found: (spans: ReceivedSpan[]) => boolean, timeoutMs = 15_000): Promise<void> {
    await waitUntil(() => found(this.spans), 'spans', { timeoutMs, everyMs: 100 }).catch(() => {
      throw new Error(
        `spans missing; got ${JSON.stringify(this.spans.map((s) => [s.component, s.name]))}` +
          (this.refused.length ? `; refused ${this.refused.join(', ')}` : ''),
      );
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
