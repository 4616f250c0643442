/** The command tree completion offers (kept beside the program so they stay in step). */
export const COMMAND_TREE: Record<string, string[]> = {
  run: [],
  config: [],
  batch: ['list', 'status', 'watch', 'jobs', 'cancel'],
  jobs: ['list', 'get', 'cancel', 'replay', 'confirm', 'transcript'],
  keys: ['create', 'list', 'revoke', 'rotate'],
  parse: ['textfsm', 'ttp'],
  templates: ['put', 'get', 'list', 'delete', 'render', 'install'],
  health: [],
  completion: ['bash', 'zsh'],
};

export const GLOBAL_FLAGS = [
  '--url',
  '--api-key',
  '--username',
  '--password',
  '--enable',
  '--ca-file',
  '--insecure',
  '--admin-secret',
  '--config',
  '--output',
  '--help',
  '--version',
];

export function bashCompletion(): string {
  const subs = Object.entries(COMMAND_TREE)
    .map(([c, s]) => `    ${c}) subs="${s.join(' ')}" ;;`)
    .join('\n');
  return `# svc bash completion: eval "$(svc completion bash)" (or save under bash-completion's dir)
_svc_complete() {
  local cur prev cmd subs
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  case "$prev" in
    --output|-o) COMPREPLY=( $(compgen -W "table json yaml" -- "$cur") ); return ;;
    --ca-file|--config|-f|--file) COMPREPLY=( $(compgen -f -- "$cur") ); return ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "${GLOBAL_FLAGS.join(' ')}" -- "$cur") ); return
  fi
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=( $(compgen -W "${Object.keys(COMMAND_TREE).join(' ')}" -- "$cur") ); return
  fi
  cmd="\${COMP_WORDS[1]}"
  subs=""
  case "$cmd" in
${subs}
  esac
  if [[ $COMP_CWORD -eq 2 && -n "$subs" ]]; then
    COMPREPLY=( $(compgen -W "$subs" -- "$cur") ); return
  fi
  COMPREPLY=( $(compgen -f -- "$cur") )
}
complete -F _svc_complete svc
`;
}

export function zshCompletion(): string {
  const subs = Object.entries(COMMAND_TREE)
    .filter(([, s]) => s.length > 0)
    .map(([c, s]) => `        ${c}) _values 'subcommand' ${s.join(' ')} ;;`)
    .join('\n');
  return `#compdef svc
# svc zsh completion: eval "$(svc completion zsh)" (or save as _svc on $fpath)
_svc() {
  local -a commands
  commands=(${Object.keys(COMMAND_TREE).join(' ')})
  _arguments -C \\
    '--url[service URL]:url:' \\
    '--api-key[API key]:key:' \\
    '--username[device username]:user:' \\
    '--password[device password]:password:' \\
    '--ca-file[CA file]:file:_files' \\
    '--config[config file]:file:_files' \\
    '--insecure[accept any certificate]' \\
    '(-o --output)'{-o,--output}'[output format]:format:(table json yaml)' \\
    '1:command:($commands)' \\
    '*::arg:->args'
  case $state in
    args)
      case $words[1] in
${subs}
        *) _files ;;
      esac
      ;;
  esac
}
compdef _svc svc
`;
}
