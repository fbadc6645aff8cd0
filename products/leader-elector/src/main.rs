//! The `leader-elector` binary: see the library docs.

fn main() -> std::process::ExitCode {
    leader_elector::main()
}
