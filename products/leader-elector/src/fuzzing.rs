//! Entry points for the fuzz targets (`fuzz/`) and the property tests; not part
//! of the API.

use crate::{Cli, Mode, one_line};

/// Reads `args` (without the program name) as the sidecar's command line and
/// goes as far as `main` goes before it needs a cluster: the parse of
/// [`Cli::try_parse_args`] (its error as the one line `main` prints), the
/// election's configuration of `serve` and `run` checked (an identity `fuzz`
/// when none is given, so the environment does not count), the manifests of
/// `fence-policy` (in the namespace `fuzz` when none is given, for the same
/// reason). `Ok` with what the sidecar would print or start with, `Err` with
/// the reason it refuses.
pub fn command_line(args: &[String]) -> Result<String, String> {
    let argv = std::iter::once("leader-elector".to_owned()).chain(args.iter().cloned());
    let cli = Cli::try_parse_args(argv).map_err(|e| one_line(&e.render().to_string()))?;
    match &cli.mode {
        Mode::FencePolicy(fence) => fence.to_yaml(cli.namespace.as_deref().unwrap_or("fuzz")),
        Mode::ExecChild { parent, command } => Ok(format!("exec {command:?} under {parent}")),
        Mode::Serve { .. } | Mode::Run { .. } => {
            let explicit = Some(
                cli.election
                    .identity
                    .clone()
                    .unwrap_or_else(|| "fuzz".to_owned()),
            );
            let id = election_ops::identity::identity_from(explicit, None, None)
                .map_err(|e| e.to_string())?;
            let config = cli.election.config(id).map_err(|e| e.to_string())?;
            Ok(format!("{config:?}"))
        }
    }
}

/// The words of the sidecar's command line, taken from its parser
/// ([`crate::command`]): every subcommand's name (the hidden ones and clap's
/// `help` too), every flag's long form (`--lease`, `--help`, `--version`, …),
/// and `--`, after which `run` takes its command. The fuzz target
/// `sidecar_args` and the property tests build their argument lists from them,
/// so a flag the parser gains is fuzzed at once. In the parser's order, each
/// once.
pub fn words() -> Vec<String> {
    let mut command = crate::command();
    command.build();
    let mut words = Vec::new();
    collect_words(&command, &mut words);
    words.push("--".to_owned());
    words
}

/// `command`'s flags, then each subcommand's name and its words, into `words`
/// (each once).
fn collect_words(command: &clap::Command, words: &mut Vec<String>) {
    let mut add = |word: String| {
        if !words.contains(&word) {
            words.push(word);
        }
    };
    for long in command.get_arguments().filter_map(clap::Arg::get_long) {
        add(format!("--{long}"));
    }
    for sub in command.get_subcommands() {
        add(sub.get_name().to_owned());
    }
    for sub in command.get_subcommands() {
        collect_words(sub, words);
    }
}

#[cfg(test)]
mod tests {
    use super::{command_line, words};

    /// How the parser answers `args`, as one line (`Ok` or its refusal).
    fn answer(args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        match command_line(&args) {
            Ok(_) => "ok".to_owned(),
            Err(reason) => reason,
        }
    }

    #[test]
    fn the_words_are_what_the_parser_accepts() {
        let words = words();
        for word in &words {
            let word = word.as_str();
            if word == "--" {
                continue;
            }
            if let Some(flag) = word.strip_prefix("--") {
                // The flag is known before a mode (`--version`) or in one.
                let modes = ["serve", "run", "fence-policy", "__exec-child"];
                let known = [None].into_iter().chain(modes.map(Some)).any(|mode| {
                    let args: Vec<&str> = mode.into_iter().chain([word]).collect();
                    !answer(&args).contains("unexpected argument")
                });
                assert!(known, "--{flag}: no mode knows it");
            } else {
                let got = answer(&[word]);
                assert!(!got.contains("unrecognized subcommand"), "{word}: {got}");
            }
        }
        // Built from the parser: its modes, its flags, clap's own, and `--`.
        for word in [
            "serve",
            "__exec-child",
            "--lease",
            "--exempt-user",
            "--version",
            "--",
        ] {
            assert!(words.iter().any(|w| w == word), "{word} missing: {words:?}");
        }
        // And the parser refuses a word it does not have, as neither of the above.
        assert!(answer(&["serve", "--no-such-flag"]).contains("unexpected argument"));
        assert!(answer(&["no-such-mode"]).contains("unrecognized subcommand"));
    }
}
