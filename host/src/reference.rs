//! The command line written out for readers, from the one definition clap
//! parses: the reference in `docs/cli.md` (with each option's config-file
//! key), shell completions (`mcp-wasm-host completions SHELL`) and the man
//! page (`mcp-wasm-host man`). Nothing here is typed twice: a flag's doc
//! comment is its help, its line in the man page and its entry in the
//! reference, and a test fails when the checked-in reference is stale.

use std::fmt::Write as _;
use std::io::Write;

use clap::{Arg, ArgAction, Command, CommandFactory as _};

use crate::cli::Cli;
use crate::config::{FileKey, file_key};

/// Writes the completion script for `shell` to `out`.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn Write) {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "mcp-wasm-host", out);
}

/// Writes the man page (roff) to `out`.
pub fn man(out: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(out)
}

/// `docs/cli.md`: every command and option, grouped by help heading, with
/// its default and where the config file sets it.
pub fn markdown() -> String {
    let mut command = Cli::command();
    command.build();
    let mut out = String::new();
    out.push_str("# Command-line reference\n\n");
    out.push_str(
        "<!-- Generated from the binary's own definition (host/src/reference.rs). Do not edit: \
         change the flag's doc comment and run `just cli-docs`; a test fails when this file is stale. -->\n\n",
    );
    push_about(&mut out, &command);
    push_usage(&mut out, &mut command);
    out.push_str("Commands:\n\n");
    for sub in visible_subcommands(&command) {
        let _ =
            writeln!(out, "- [`{}`](#mcp-wasm-host-{}): {}", sub.get_name(), sub.get_name(), first_line(sub));
    }
    out.push_str(
        "\nEach option below says where a [config file](config.md) sets it: a key of `[server]`, of \
         `[server.auth]`, or of `[defaults]` and each `[[component]]`. A flag given on the command line \
         wins over the file.\n",
    );
    push_options(&mut out, command.get_arguments().collect(), 2, true);

    let serving: Vec<String> = command.get_arguments().map(|arg| arg.get_id().to_string()).collect();
    for sub in visible_subcommands(&command) {
        let name = sub.get_name().to_string();
        let _ = write!(out, "\n## mcp-wasm-host {name}\n\n");
        let mut sub = sub.clone();
        push_about(&mut out, &sub);
        push_usage(&mut out, &mut sub);
        // `call` takes the serving options too: listed once, above.
        let own: Vec<&Arg> =
            sub.get_arguments().filter(|arg| !serving.contains(&arg.get_id().to_string())).collect();
        if own.len() < sub.get_arguments().count() {
            out.push_str("It also takes the serving options above.\n");
        }
        push_options(&mut out, own, 3, false);
    }
    out
}

/// The commands a user can run (not `help`).
fn visible_subcommands(command: &Command) -> impl Iterator<Item = &Command> {
    command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// A command's first line of help.
fn first_line(command: &Command) -> String {
    command.get_about().map(|about| about.to_string()).unwrap_or_default()
}

fn push_about(out: &mut String, command: &Command) {
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        let _ = write!(out, "{}\n\n", about.to_string().trim_end());
    }
}

fn push_usage(out: &mut String, command: &mut Command) {
    let usage = command.render_usage().to_string();
    let _ = write!(out, "```text\n{}\n```\n\n", usage.trim_end());
}

/// The options in `args` under their headings (in the order they first
/// appear), as markdown headings of `level`; `keys`: with their config-file
/// keys (the serving options).
fn push_options(out: &mut String, args: Vec<&Arg>, level: usize, keys: bool) {
    let shown: Vec<&Arg> = args
        .into_iter()
        .filter(|arg| !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version"))
        .collect();
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in &shown {
        let heading = arg.get_help_heading();
        if !headings.contains(&heading) {
            headings.push(heading);
        }
    }
    let hashes = "#".repeat(level);
    for heading in headings {
        let title = match heading {
            Some(title) => title,
            None if level == 2 => "Options",
            None => "Arguments and options",
        };
        let _ = write!(out, "\n{hashes} {title}\n");
        for arg in shown.iter().filter(|arg| arg.get_help_heading() == heading) {
            push_option(out, arg, level + 1, keys);
        }
    }
}

fn push_option(out: &mut String, arg: &Arg, level: usize, keys: bool) {
    let _ = write!(out, "\n{} `{}`\n\n", "#".repeat(level), spelling(arg));
    let help = arg.get_long_help().or(arg.get_help()).map(|help| help.to_string()).unwrap_or_default();
    let _ = writeln!(out, "{}", help.trim_end());
    let mut facts = Vec::new();
    if takes_value(arg) {
        let defaults: Vec<String> =
            arg.get_default_values().iter().map(|value| value.to_string_lossy().into_owned()).collect();
        if !defaults.is_empty() {
            facts.push(format!("Default: `{}`", defaults.join(",")));
        }
        let values: Vec<String> = (arg.get_possible_values().iter())
            .filter(|value| !value.is_hide_set())
            .map(|value| format!("`{}`", value.get_name()))
            .collect();
        if !values.is_empty() {
            facts.push(format!("Values: {}", values.join(", ")));
        }
    }
    if matches!(arg.get_action(), ArgAction::Append) {
        facts.push("Repeatable".to_string());
    }
    if keys {
        facts.push(match file_key(arg.get_id().as_str()) {
            Some(FileKey::Server(key)) => format!("Config file: `{key}` in `[server]`"),
            Some(FileKey::Auth(key)) => format!("Config file: `{key}` in `[server.auth]`"),
            Some(FileKey::Component(key)) if key == "path" => {
                "Config file: a `[[component]]` with `path` (or `oci`)".to_string()
            }
            Some(FileKey::Component(key)) if key == "config" => {
                "Config file: `[component.config]`".to_string()
            }
            Some(FileKey::Component(key)) => {
                format!("Config file: `{key}` in `[defaults]` or a `[[component]]`")
            }
            Some(FileKey::Nowhere(why)) => format!("Not in the config file: {why}"),
            None => "Not in the config file".to_string(),
        });
    }
    if !facts.is_empty() {
        let _ = write!(out, "\n{}.\n", facts.join(". "));
    }
}

/// Whether `arg` takes a value (`--fuel N`), rather than being a switch.
fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values()
}

/// How the option is written: `-c, --component <PATH|oci://REF>`, `--watch`, `<TOOL>`.
fn spelling(arg: &Arg) -> String {
    let names = (arg.get_value_names().unwrap_or_default().iter())
        .map(|name| format!("<{name}>"))
        .collect::<Vec<_>>()
        .join(" ");
    let names = if names.is_empty() && takes_value(arg) {
        format!("<{}>", arg.get_id().as_str().to_uppercase())
    } else {
        names
    };
    match (arg.get_short(), arg.get_long()) {
        (_, None) => names,
        (short, Some(long)) => {
            let short = short.map(|short| format!("-{short}, ")).unwrap_or_default();
            let value = if takes_value(arg) { format!(" {names}") } else { String::new() };
            format!("{short}--{long}{value}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/cli.md` is what the binary says now. `UPDATE_CLI_DOCS=1`
    /// (`just cli-docs`) rewrites it instead.
    #[test]
    fn the_checked_in_reference_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
        let now = markdown();
        if std::env::var_os("UPDATE_CLI_DOCS").is_some() {
            std::fs::write(&path, &now).unwrap();
            return;
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(checked_in == now, "docs/cli.md is stale: run `just cli-docs` and commit it");
    }

    /// Every serving option sits under a heading, so `--help` has no
    /// catch-all group.
    #[test]
    fn every_serving_option_has_a_heading() {
        let command = Cli::command();
        let loose: Vec<&str> = (command.get_arguments())
            .filter(|arg| !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version"))
            .filter(|arg| arg.get_help_heading().is_none())
            .filter_map(|arg| arg.get_long())
            .collect();
        assert!(loose.is_empty(), "give these a help_heading (config/heading.rs): {loose:?}");
    }

    #[test]
    fn completions_and_the_man_page_are_written() {
        let mut script = Vec::new();
        completions(clap_complete::Shell::Bash, &mut script);
        let script = String::from_utf8(script).unwrap();
        assert!(script.contains("--max-concurrent-calls") && script.contains("inspect"), "{script}");
        let mut page = Vec::new();
        man(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains(".TH") && page.contains("max\\-memory"), "{page}");
    }
}
