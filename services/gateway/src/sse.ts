import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from './http-errors.js';

/** Milliseconds between SSE comment lines that keep proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

export interface SseSettings {
  /** SSE_MAX_CONNECTIONS: open streams per gateway process. */
  maxConnections: number;
  /** SSE_MAX_CONNECTIONS_PER_CALLER (resolved): open streams of one caller per process. */
  maxPerCaller: number;
  /** SSE_TIMEOUT, seconds. */
  timeoutSeconds: number;
  /** SSE_RETRY, seconds: the reconnect delay told to clients in the `retry:` line. */
  retrySeconds: number;
}

/** One open event stream (a hijacked 200 `text/event-stream` response). */
export interface SseStream {
  /**
   * Writes one event. With `id` the client remembers it and sends it back as `Last-Event-ID`
   * when it reconnects; an event without one leaves the client's last id as it was.
   */
  send(event: string, data: unknown, id?: string): void;
  /** Runs `fn` once when the stream ends, whoever ends it (at once when it has ended). */
  onEnd(fn: () => void): void;
  /** Ends the response; safe to call more than once. */
  end(): void;
  readonly ended: boolean;
}

/** A place among the open streams, held from the request's start to the stream's end. */
export interface SseSlot {
  /** Answers 200 with the event stream; the slot is given back when the stream ends. */
  start(reply: FastifyReply, timeoutEvent: () => { event: string; data: unknown }): SseStream;
  /** Gives the slot back without streaming (an error or a 204); safe to call more than once. */
  release(): void;
}

/**
 * Every SSE stream of one gateway process, on both its listeners: the SSE_MAX_CONNECTIONS cap,
 * the wire format (`retry:`, `id:`, keepalive comments, the timeout) and the one place where a
 * stream opens (`reserve`) and closes (`release`), so `open` is always the number in use.
 */
export class SseStreams {
  #open = 0;
  /** Open streams per caller id (entries removed at zero: the map holds only live callers). */
  readonly #byCaller = new Map<string, number>();
  readonly #live = new Set<() => void>();

  constructor(private readonly settings: SseSettings) {}

  /** Streams open now (slots held, including ones still preparing their first answer). */
  get open(): number {
    return this.#open;
  }

  /**
   * Takes a slot for `caller` or throws 429; take it before any work so a refused client costs
   * nothing. A caller holding its share is refused alone: the others keep the rest.
   */
  reserve(caller: string): SseSlot {
    const { maxConnections, maxPerCaller } = this.settings;
    const own = this.#byCaller.get(caller) ?? 0;
    if (own >= maxPerCaller) {
      throw new HttpError(
        429,
        `too many open streams of this caller (SSE_MAX_CONNECTIONS_PER_CALLER=${maxPerCaller})`,
        { 'Retry-After': '5' },
      );
    }
    if (this.#open >= maxConnections) {
      throw new HttpError(429, `too many open streams (SSE_MAX_CONNECTIONS=${maxConnections})`, {
        'Retry-After': '5',
      });
    }
    this.#open++;
    this.#byCaller.set(caller, own + 1);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      this.#open--;
      const left = (this.#byCaller.get(caller) ?? 1) - 1;
      if (left > 0) this.#byCaller.set(caller, left);
      else this.#byCaller.delete(caller);
    };
    return { release, start: (reply, timeoutEvent) => this.#start(reply, release, timeoutEvent) };
  }

  /** Ends every open stream: hijacked responses would otherwise hold a server's close. */
  closeAll(): void {
    for (const end of [...this.#live]) end();
  }

  /** Registers `closeAll` before the app closes. */
  register(app: { addHook(name: 'preClose', fn: (done: () => void) => void): unknown }): void {
    app.addHook('preClose', (done) => {
      this.closeAll();
      done();
    });
  }

  #start(
    reply: FastifyReply,
    release: () => void,
    timeoutEvent: () => { event: string; data: unknown },
  ): SseStream {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(`retry: ${Math.round(this.settings.retrySeconds * 1000)}\n\n`);
    let ended = false;
    const cleanups: (() => void)[] = [];
    const keepalive = setInterval(() => {
      if (!ended) res.write(': keepalive\n\n');
    }, KEEPALIVE_MS);
    const timeout = setTimeout(() => {
      const { event, data } = timeoutEvent();
      stream.send(event, data);
      end();
    }, this.settings.timeoutSeconds * 1000);
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(keepalive);
      clearTimeout(timeout);
      this.#live.delete(end);
      release();
      for (const fn of cleanups) fn();
      res.end();
    };
    const stream: SseStream = {
      send(event, data, id) {
        if (ended) return;
        // Ids are digits or plain words of ours: never a line break that could split the event.
        res.write(
          `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`,
        );
      },
      onEnd: (fn) => {
        if (ended) fn();
        else cleanups.push(fn);
      },
      end,
      get ended() {
        return ended;
      },
    };
    this.#live.add(end);
    // The client went away (or the server closed): free the slot, timers and the feed at once.
    res.once('close', end);
    // It went away while the route prepared its answer (a batch stream opens its consumer
    // first): that close has been and gone, and would not free the slot until SSE_TIMEOUT.
    if (res.destroyed || res.socket === null || res.socket.destroyed) end();
    return stream;
  }
}

/** The `Last-Event-ID` request header, or null when absent or empty. */
export function lastEventId(req: FastifyRequest): string | null {
  const value = req.headers['last-event-id'];
  const text = Array.isArray(value) ? value[0] : value;
  return text ? text.trim() : null;
}
