//! The `parity` command line. All logic lives in the library; see `parity --help`.

fn main() {
    std::process::exit(parity::cli::main());
}
