// Where the community test data is: SVC_SHARED_DIR, else `shared/` beside the checkout (read,
// never copied). A user's clone has none: tests of that data skip with `ntcSkip` as the reason.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const sharedDir =
  process.env['SVC_SHARED_DIR'] ?? fileURLToPath(new URL('../../../../shared', import.meta.url));
/** The ntc-templates collection's template folder (its `index` and `*.textfsm`). */
export const ntcTemplatesDir = join(sharedDir, 'ntc-templates', 'templates');
/** A skip reason when the ntc-templates data is missing, else false. */
export const ntcSkip: string | false = existsSync(join(ntcTemplatesDir, 'index'))
  ? false
  : `no ntc-templates test data at ${join(sharedDir, 'ntc-templates')}`;

/**
 * A folder in the ntc-templates layout with one template (cisco_ios `show ip interface brief`),
 * for tests that need the index lookup to work but are not about the community data.
 */
export function writeTextfsmFixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-textfsm-'));
  // Test files call this at load and hand the folder to services for the whole file's run.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, 'index'),
    'Template, Hostname, Platform, Command\n\n' +
      'cisco_ios_show_ip_interface_brief.textfsm, .*, cisco_ios, sh[[ow]] ip int[[erface]] br[[ief]]\n',
  );
  writeFileSync(
    join(dir, 'cisco_ios_show_ip_interface_brief.textfsm'),
    [
      'Value INTERFACE (\\S+)',
      'Value IP_ADDRESS (\\S+)',
      'Value STATUS (up|down|administratively down)',
      'Value PROTO (up|down)',
      '',
      'Start',
      '  ^${INTERFACE}\\s+${IP_ADDRESS}\\s+\\w+\\s+\\w+\\s+${STATUS}\\s+${PROTO}\\s*$$ -> Record',
      '',
    ].join('\n'),
  );
  return dir;
}
