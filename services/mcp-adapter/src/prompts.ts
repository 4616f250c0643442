import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

/** Diagnostic commands per platform family for troubleshoot_device; read-only on purpose. */
const DIAGNOSTICS: Readonly<Record<string, readonly string[]>> = {
  cisco: [
    'show version',
    'show ip interface brief',
    'show interfaces',
    'show logging',
    'show ip route',
    'show processes cpu sorted',
  ],
  arista: [
    'show version',
    'show ip interface brief',
    'show interfaces status',
    'show logging',
    'show ip route',
  ],
  juniper: [
    'show version',
    'show interfaces terse',
    'show log messages | last 50',
    'show route summary',
    'show system alarms',
  ],
  hp: ['show version', 'show interfaces brief', 'show logging', 'show ip route'],
  linux: ['uname -a', 'uptime', 'ip -brief address', 'ip route', 'dmesg | tail -n 50'],
};

function diagnosticsFor(platform: string): readonly string[] {
  const family = platform.split('_')[0] ?? '';
  return DIAGNOSTICS[family] ?? DIAGNOSTICS['cisco'] ?? [];
}

/** `a, b ,,c` → `['a','b','c']`: prompts take commands as one comma-separated string. */
export function splitCommands(text: string): string[] {
  return text
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c.length > 0);
}

const CREDENTIALS_NOTE =
  'The tools need the device username and password; ask me for them if you do not have them, ' +
  'and never repeat the password back in your answer.';

function userMessage(text: string): GetPromptResult {
  return { messages: [{ role: 'user', content: { type: 'text', text } }] };
}

const host = z.string().describe('Device address (IPv4, IPv6 or hostname).');
const platform = z
  .string()
  .describe('Device-driver platform, e.g. cisco_ios, arista_eos, juniper_junos.');
const commands = z.string().describe('Commands, comma-separated.');

export function registerPrompts(server: McpServer): void {
  server.registerPrompt(
    'show_commands',
    {
      title: 'Run show commands',
      description: 'Run read-only commands on a device and summarize the output.',
      argsSchema: { host, platform, commands },
    },
    (args) => {
      const list = splitCommands(args.commands);
      return userMessage(
        [
          `Run these read-only commands on ${args.host} (platform ${args.platform}) with the send_command tool:`,
          ...list.map((c) => `- ${c}`),
          `Pass commands as the list ${JSON.stringify(list)}. ${CREDENTIALS_NOTE}`,
          'When the job finishes, summarize the output per command and point out anything abnormal ' +
            '(interfaces down, errors, high utilisation). If the tool returns an error, report its ' +
            'error_code and whether error_retryable is true.',
        ].join('\n'),
      );
    },
  );

  server.registerPrompt(
    'config_push',
    {
      title: 'Push configuration',
      description: 'Review and push configuration lines to a device, optionally saving them.',
      argsSchema: {
        host,
        platform,
        commands: z.string().describe('Configuration lines, comma-separated.'),
        save: z
          .string()
          .optional()
          .describe('yes to save the running configuration to startup; default no.'),
      },
    },
    (args) => {
      const list = splitCommands(args.commands);
      const save = (args.save ?? 'no').trim().toLowerCase() === 'yes';
      return userMessage(
        [
          `I want to push this configuration to ${args.host} (platform ${args.platform}):`,
          ...list.map((c) => `  ${c}`),
          'First show me the lines and explain their effect, and point out anything risky ' +
            '(loss of management access, shutdown of interfaces, routing changes). Wait for my confirmation.',
          `After I confirm, call send_config with commands ${JSON.stringify(list)} and save_config ${String(save)}` +
            (args.platform.includes('junos') || args.platform.includes('xr')
              ? ' and commit true.'
              : '.'),
          `${CREDENTIALS_NOTE} Then verify the change with send_command (for example the relevant part ` +
            'of the running configuration) and report the outcome. If the job fails, do not retry ' +
            'automatically: a configuration job must not be pushed twice without my consent.',
        ].join('\n'),
      );
    },
  );

  server.registerPrompt(
    'troubleshoot_device',
    {
      title: 'Troubleshoot a device',
      description: 'Collect read-only diagnostics from a device and analyse them.',
      argsSchema: { host, platform },
    },
    (args) => {
      const list = diagnosticsFor(args.platform);
      return userMessage(
        [
          `Troubleshoot ${args.host} (platform ${args.platform}). Collect diagnostics with one send_command call:`,
          ...list.map((c) => `- ${c}`),
          `${CREDENTIALS_NOTE} Use only read-only commands; propose configuration changes but do not apply them.`,
          'Analyse the output: hardware and software state, uptime and reload reason, interface errors ' +
            'and down links, recent log events, routing, CPU. List findings by severity with the evidence ' +
            'lines, then suggest next steps. If the job fails with CONNECTION_TIMEOUT, HOST_UNREACHABLE or ' +
            'CIRCUIT_OPEN, the device is not reachable from the service: say so instead of guessing.',
        ].join('\n'),
      );
    },
  );
}
