// `svc templates install` without the network: archives and folders in the upstream layout,
// built in a temporary folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { create as createTar } from 'tar';
import { installCommunityTemplates } from '../src/community-templates.js';
import { CliError, ExitCode } from '../src/exit-codes.js';

const INDEX =
  'Template, Hostname, Platform, Command\n\n' +
  'cisco_ios_show_clock.textfsm, .*, cisco_ios, sh[[ow]] clo[[ck]]\n';
const TEMPLATE = 'Value TIME (\\S+)\n\nStart\n  ^${TIME} -> Record\n';

async function workdir(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-cli-templates-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** An ntc-templates checkout: `<top>/ntc_templates/templates/{index,*.textfsm}`. */
async function ntcCheckout(root: string, top: string, template = TEMPLATE): Promise<string> {
  const dir = join(root, top, 'ntc_templates', 'templates');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'index'), INDEX);
  await writeFile(join(dir, 'cisco_ios_show_clock.textfsm'), template);
  // The upstream repository's test data beside the package: not part of the collection.
  await mkdir(join(root, top, 'tests', 'cisco_ios', 'show_clock'), { recursive: true });
  return join(root, top);
}

test('when installed from a folder in the upstream layout, then the collection lands in SVC_DATA_DIR/templates/ntc-templates', async (t) => {
  const work = await workdir(t);
  const source = await ntcCheckout(work, 'ntc-templates');
  const dataDir = join(work, 'data');
  const installed = await installCommunityTemplates([source], dataDir);
  assert.deepEqual(installed, [
    {
      collection: 'ntc-templates',
      path: join(dataDir, 'templates', 'ntc-templates'),
      templates: 1,
      source,
    },
  ]);
  assert.deepEqual((await readdir(installed[0]!.path)).sort(), [
    'cisco_ios_show_clock.textfsm',
    'index',
  ]);
});

test('when installed again from a .tar.gz, then the new collection replaces the old one whole', async (t) => {
  const work = await workdir(t);
  const dataDir = join(work, 'data');
  await installCommunityTemplates([await ntcCheckout(work, 'old')], dataDir);
  await ntcCheckout(join(work, 'src'), 'ntc-templates-9.9.1', 'Value NEW (\\S+)\n\nStart\n');
  const archive = join(work, 'ntc.tar.gz');
  await createTar({ gzip: true, file: archive, cwd: join(work, 'src') }, ['ntc-templates-9.9.1']);
  await installCommunityTemplates([archive], dataDir);
  const target = join(dataDir, 'templates', 'ntc-templates');
  assert.match(await readFile(join(target, 'cisco_ios_show_clock.textfsm'), 'utf8'), /NEW/);
  // No staging or old folder left beside it.
  assert.deepEqual(await readdir(join(dataDir, 'templates')), ['ntc-templates']);
});

test('when a source holds no collection, then the install fails naming it and what is installed stays', async (t) => {
  const work = await workdir(t);
  const dataDir = join(work, 'data');
  await installCommunityTemplates([await ntcCheckout(work, 'good')], dataDir);
  const empty = join(work, 'empty');
  await mkdir(join(empty, 'nothing'), { recursive: true });
  await assert.rejects(
    installCommunityTemplates([empty], dataDir),
    (err: unknown) =>
      err instanceof CliError && err.exitCode === ExitCode.usage && err.message.includes(empty),
  );
  assert.ok(existsSync(join(dataDir, 'templates', 'ntc-templates', 'index')));
});

test('when the index is unusable, then nothing replaces the installed collection', async (t) => {
  const work = await workdir(t);
  const dataDir = join(work, 'data');
  await installCommunityTemplates([await ntcCheckout(work, 'good')], dataDir);
  const bad = await ntcCheckout(work, 'bad');
  await writeFile(join(bad, 'ntc_templates', 'templates', 'index'), 'Platform, Command\n');
  await assert.rejects(
    installCommunityTemplates([bad], dataDir),
    (err: unknown) => err instanceof CliError && /index is unusable/.test(err.message),
  );
  assert.equal(await readFile(join(dataDir, 'templates', 'ntc-templates', 'index'), 'utf8'), INDEX);
});

test('when a file is not an archive, then the install fails with a usage error', async (t) => {
  const work = await workdir(t);
  const file = join(work, 'notes.txt');
  await writeFile(file, 'not an archive');
  await assert.rejects(
    installCommunityTemplates([file], join(work, 'data')),
    (err: unknown) => err instanceof CliError && err.exitCode === ExitCode.usage,
  );
});

// The community data beside the checkout, when there (CI has it; a user's clone does not).
const shared = fileURLToPath(new URL('../../../../shared', import.meta.url));
const sharedSkip =
  existsSync(join(shared, 'ntc-templates')) && existsSync(join(shared, 'ttp_templates'))
    ? false
    : `no community test data at ${shared}`;

test(
  'when installed from the shared community folders, then both collections are found',
  { skip: sharedSkip },
  async (t) => {
    const work = await workdir(t);
    const dataDir = join(work, 'data');
    const installed = await installCommunityTemplates(
      [join(shared, 'ntc-templates'), join(shared, 'ttp_templates')],
      dataDir,
    );
    assert.deepEqual(
      installed.map((i) => i.collection),
      ['ntc-templates', 'ttp_templates'],
    );
    assert.ok(
      installed.every((i) => i.templates > 10),
      JSON.stringify(installed),
    );
    assert.ok(existsSync(join(dataDir, 'templates', 'ttp_templates', 'platform')));
  },
);
