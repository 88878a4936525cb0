//! The `strata` binary: argument parsing and wiring (layer 5). Everything it
//! does is in the library; this file only maps results to output and exit
//! codes (0 ok, 1 runtime error, 2 usage error).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
