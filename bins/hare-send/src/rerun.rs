//! The command that finishes an interrupted job: this very command line, quoted for a POSIX
//! shell, so that it can be pasted back as it is printed (a rerun skips the files the
//! receiver has and continues the partial ones).

/// This process's command line, each argument quoted where a shell would change it (the
/// same quoting as the commands hare runs over ssh).
pub fn command_line() -> String {
    std::env::args_os()
        .map(|a| hare_ssh::shell_quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}
