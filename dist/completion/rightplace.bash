# bash completion for rightplace(1). tests/install/man_flags.sh checks that every option
# `rightplace --help` prints is listed here.
_rightplace()
{
    local cur prev words cword
    _init_completion 2>/dev/null || {
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    }
    local commands="reconcile plan explain replay status diff suspend resume version help"
    local opts="--repo --source-branch --deploy-branch --state-dir --path --once --interval
        --no-apply --resync --apply-concurrency --force --max-source-mib --no-parse-cache --replace-unreachable-after --propose --committer-name --committer-email
        --source --luna-label --no-luna-label --mode --token-file --kubeconfig --kubeconfig-dir
        --ssh-key --git-timeout --output --lock-timeout --metrics-file --listen --log-level --log-json --help --version"

    case $prev in
    --repo|--state-dir|--path|--token-file|--ssh-key|--kubeconfig|--kubeconfig-dir|--metrics-file)
        COMPREPLY=($(compgen -f -- "$cur"))
        compopt -o filenames 2>/dev/null
        return ;;
    --output|-o)
        COMPREPLY=($(compgen -W "text json" -- "$cur"))
        return ;;
    --log-level)
        COMPREPLY=($(compgen -W "error warn info debug" -- "$cur"))
        return ;;
    --mode)
        COMPREPLY=($(compgen -W "push pull" -- "$cur"))
        return ;;
    --interval|--lock-timeout|--git-timeout|--replace-unreachable-after|--listen|--propose|--committer-name|--committer-email|--source-branch|--deploy-branch|--source|--luna-label)
        return ;;
    esac
    local i have_cmd=
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        reconcile|plan|explain|replay|status|diff|suspend|resume|version|help) have_cmd=${words[i]} ;;
        esac
    done
    if [[ $cur == -* || -n $have_cmd ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
    fi
}
complete -F _rightplace rightplace
