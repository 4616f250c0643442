/**
 * `svc templates install`: the community parsing templates (ntc-templates for TextFSM,
 * ttp_templates for TTP) put where the device actors look when SVC_TEXTFSM_DIR and
 * SVC_TTP_TEMPLATES_DIR are empty: `<SVC_DATA_DIR>/templates/` (docs/parsers.md). A local
 * operation: no service is called. Sources are the upstream release archives (GitHub's
 * .tar.gz or .zip of a tag), a URL to one, or a folder in the upstream layout.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { cp, mkdir, mkdtemp, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import AdmZip from 'adm-zip';
import type { Command } from 'commander';
import { extract as extractTar } from 'tar';
import { parseIndexFile } from '@svc/parsers';
import { TEXTFSM_COLLECTION, TTP_COLLECTION, communityTemplateDirs } from '@svc/proto/local-data';
import { CliError, ExitCode } from './exit-codes.js';
import { table } from './output.js';

/**
 * The upstream release archives installed by default (GitHub's archive of the release tag; its
 * top folder is `<repo>-<version>/`). Pinned: a new release is a deliberate update here.
 */
export const DEFAULT_SOURCES = [
  'https://github.com/networktocode/ntc-templates/archive/refs/tags/v9.3.0.tar.gz',
  'https://github.com/dmulyalin/ttp_templates/archive/refs/tags/0.6.18.tar.gz',
] as const;

/** Largest archive downloaded, bytes (the ntc-templates archive, tests included, is far below). */
const MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024;
/** How deep below a source's root a collection is looked for (`<top>/ntc_templates/templates`). */
const MAX_DEPTH = 4;
/** Folders of the ttp_templates library; the one holding them is the `ttp://` root. */
const TTP_LIBRARY_FOLDERS = ['platform', 'get', 'misc'];

export type Collection = typeof TEXTFSM_COLLECTION | typeof TTP_COLLECTION;

export interface InstalledCollection {
  collection: Collection;
  /** Where it is now. */
  path: string;
  /** Template files in it (`*.textfsm`, or the TTP library's `*.txt`). */
  templates: number;
  /** The URL, archive or folder it came from. */
  source: string;
}

/** Installs every collection found in the sources; a source with none is an error. */
export async function installCommunityTemplates(
  sources: readonly string[],
  dataDir: string,
): Promise<InstalledCollection[]> {
  const installed: InstalledCollection[] = [];
  const scratch = await mkdtemp(join(tmpdir(), 'svc-templates-'));
  try {
    for (const source of sources) {
      const root = await materialize(source, scratch);
      const found = await locate(root);
      if (found.textfsm === null && found.ttp === null) {
        throw new CliError(
          ExitCode.usage,
          `${source}: neither an ntc-templates collection (a folder with an index and *.textfsm files, upstream ntc_templates/templates) nor a ttp_templates library (upstream ttp_templates/ with platform/, get/, misc/)`,
        );
      }
      const targets = communityTemplateDirs(dataDir);
      if (found.textfsm !== null) {
        await checkIndex(found.textfsm, source);
        await replaceDir(found.textfsm, targets.textfsm);
        installed.push({
          collection: TEXTFSM_COLLECTION,
          path: targets.textfsm,
          templates: await countFiles(targets.textfsm, '.textfsm', false),
          source,
        });
      }
      if (found.ttp !== null) {
        await replaceDir(found.ttp, targets.ttp);
        installed.push({
          collection: TTP_COLLECTION,
          path: targets.ttp,
          templates: await countFiles(targets.ttp, '.txt', true),
          source,
        });
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return installed;
}

/** A folder holding the source's files: the folder itself, or an archive extracted in scratch. */
async function materialize(source: string, scratch: string): Promise<string> {
  let file: string;
  if (/^https?:\/\//i.test(source)) {
    file = await download(source, scratch);
  } else {
    const path = resolve(source);
    let st;
    try {
      st = await stat(path);
    } catch (err) {
      throw new CliError(ExitCode.usage, `${source}: ${(err as Error).message}`);
    }
    if (st.isDirectory()) return path;
    file = path;
  }
  const into = await mkdtemp(join(scratch, 'x-'));
  const kind = await archiveKind(file);
  try {
    if (kind === 'zip') extractZip(file, into);
    else if (kind === 'tar') {
      // Files and folders only: a link in an archive could point a later file outside `into`.
      await extractTar({
        file,
        cwd: into,
        strict: true,
        filter: (_path, entry) =>
          'type' in entry ? entry.type === 'File' || entry.type === 'Directory' : true,
      });
    } else {
      throw new CliError(
        ExitCode.usage,
        `${source}: not a .tar.gz, .tar or .zip archive, nor a folder`,
      );
    }
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(ExitCode.failed, `${source}: cannot extract: ${(err as Error).message}`);
  }
  return into;
}

async function download(url: string, scratch: string): Promise<string> {
  let answer: Response;
  try {
    answer = await fetch(url, { redirect: 'follow' });
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause;
    throw new CliError(
      ExitCode.unreachable,
      `${url}: ${cause?.message ?? (err as Error).message} (use --from with a downloaded archive or a folder)`,
    );
  }
  if (!answer.ok || answer.body === null) {
    throw new CliError(ExitCode.unreachable, `${url}: HTTP ${answer.status}`);
  }
  const length = Number(answer.headers.get('content-length') ?? '0');
  if (length > MAX_DOWNLOAD_BYTES) {
    throw new CliError(ExitCode.failed, `${url}: ${length} bytes, more than ${MAX_DOWNLOAD_BYTES}`);
  }
  const file = join(scratch, `download-${randomBytes(4).toString('hex')}`);
  let size = 0;
  const body = Readable.fromWeb(answer.body as WebReadableStream<Uint8Array>);
  body.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_DOWNLOAD_BYTES) body.destroy(new Error(`more than ${MAX_DOWNLOAD_BYTES} bytes`));
  });
  try {
    await pipeline(body, createWriteStream(file));
  } catch (err) {
    throw new CliError(ExitCode.unreachable, `${url}: ${(err as Error).message}`);
  }
  return file;
}

/** By the first bytes, whatever the name says: zip (`PK`), gzip, or a plain tar (`ustar`). */
async function archiveKind(file: string): Promise<'zip' | 'tar' | null> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(262);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0x04034b50) return 'zip';
    if (bytesRead >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tar';
    if (bytesRead >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
    return null;
  } finally {
    await handle.close();
  }
}

/** Files and folders of a zip under `into`; links and names leaving `into` are refused. */
function extractZip(file: string, into: string): void {
  const zip = new AdmZip(file);
  for (const entry of zip.getEntries()) {
    const target = resolve(into, entry.entryName);
    if (target !== into && !target.startsWith(into + sep)) {
      throw new Error(`entry ${JSON.stringify(entry.entryName)} leaves the archive's folder`);
    }
    // Unix mode in the high half of the external attributes; 0o120000 is a symbolic link.
    if (((entry.attr >>> 16) & 0o170000) === 0o120000) continue;
    if (entry.isDirectory) continue;
    zip.extractEntryTo(entry, into, true, true);
  }
}

/** The collections' folders in an upstream layout, breadth first (the shallowest wins). */
async function locate(root: string): Promise<{ textfsm: string | null; ttp: string | null }> {
  let textfsm: string | null = null;
  let ttp: string | null = null;
  let level = [root];
  for (let depth = 0; depth <= MAX_DEPTH && level.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of level) {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      const files = new Set(entries.filter((e) => e.isFile()).map((e) => e.name));
      const dirs = entries.filter((e) => e.isDirectory()).map((e) => e.name);
      if (textfsm === null && files.has('index') && [...files].some((f) => f.endsWith('.textfsm')))
        textfsm = dir;
      if (
        ttp === null &&
        basename(dir) === TTP_COLLECTION &&
        dirs.some((d) => TTP_LIBRARY_FOLDERS.includes(d))
      )
        ttp = dir;
      for (const d of dirs) if (!d.startsWith('.')) next.push(join(dir, d));
    }
    if (textfsm !== null && ttp !== null) break;
    level = next;
  }
  return { textfsm, ttp };
}

/** The index is read as the actors will read it: a broken one never replaces a working one. */
async function checkIndex(dir: string, source: string): Promise<void> {
  try {
    parseIndexFile(await readFile(join(dir, 'index'), 'utf8'), dir);
  } catch (err) {
    throw new CliError(
      ExitCode.failed,
      `${source}: its index is unusable: ${(err as Error).message}`,
    );
  }
}

/**
 * Copies `from` beside `target` first, then swaps it in by renames: an actor reading during an
 * install sees the old collection or the new one, never a half-copied folder.
 */
async function replaceDir(from: string, target: string): Promise<void> {
  const parent = dirname(target);
  await mkdir(parent, { recursive: true });
  const tag = randomBytes(4).toString('hex');
  const staging = `${target}.new-${tag}`;
  const old = `${target}.old-${tag}`;
  await cp(from, staging, { recursive: true, dereference: false, verbatimSymlinks: true });
  let moved = false;
  try {
    await rename(target, old);
    moved = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
  }
  await rename(staging, target);
  if (moved) await rm(old, { recursive: true, force: true });
}

async function countFiles(dir: string, suffix: string, deep: boolean): Promise<number> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: deep });
  return entries.filter((e) => e.isFile() && e.name.endsWith(suffix)).length;
}

export interface CommunityTemplateDeps {
  out(cmd: Command, value: unknown, asTable: () => string): void;
  /** SVC_DATA_DIR as the launcher and the actors read it (absolute). */
  dataDir(): string;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** `svc templates install` beside the stored configuration template commands. */
export function registerCommunityTemplateCommands(
  program: Command,
  deps: CommunityTemplateDeps,
): void {
  const templates =
    program.commands.find((c) => c.name() === 'templates') ?? program.command('templates');
  templates
    .command('install')
    .description(
      'install the community parsing templates (ntc-templates, ttp_templates) into SVC_DATA_DIR/templates for structured jobs; local, no service call',
    )
    .option(
      '--from <url|path>',
      'a release archive (.tar.gz or .zip, upstream layout), its URL, or a folder; repeatable (default: both upstream releases)',
      collect,
    )
    .action(async (o: { from?: string[] }, cmd: Command) => {
      const dataDir = deps.dataDir();
      const installed = await installCommunityTemplates(o.from ?? DEFAULT_SOURCES, dataDir);
      deps.out(cmd, { installed }, () =>
        table(
          ['collection', 'templates', 'path', 'source'],
          installed as unknown as Record<string, unknown>[],
        ),
      );
    });
}
